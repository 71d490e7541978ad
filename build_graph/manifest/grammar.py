"""Pydantic types for the values of images.toml that reach a Dockerfile (the schema's door).

The rules themselves are manifest/values.py (pure); these wrap them as validators, plus
pip requirements (PEP 508, through packaging).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Annotated

from packaging.requirements import InvalidRequirement, Requirement
from pydantic import AfterValidator

from build_graph.manifest.values import (
    APT_RE,
    ARG_RE,
    CONTEXT_RE,
    FIELD_NAME_RE,
    NAME_RE,
    REPO_RE,
    VERSION_RE,
    conforms,
    fill_fields,
    forbidden_character,
    single_line,
)
from build_graph.oci.platforms import parse_platform


def _matching(pattern: re.Pattern[str], what: str, example: str) -> AfterValidator:
    def check(value: str) -> str:
        if not conforms(pattern, value):
            found = forbidden_character(value)
            why = f": it contains {found}" if found else ""
            raise ValueError(f"{value!r} is not a valid {what} (for example {example!r}){why}")
        return value

    return AfterValidator(check)


def requirement(value: str) -> str:
    """A pip requirement ('numpy<2', 'torch==2.6.0', 'torch=={torch}'): PEP 508, single
    line; a {field} is checked as a version here and the filled text again on resolve."""
    single_line(value)
    try:
        # Every field reads as the version '0': the shape is checked before versions are known.
        Requirement(fill_fields(value, defaultdict(lambda: "0")))
    except InvalidRequirement as exc:
        raise ValueError(f"{value!r} is not a pip requirement: {exc}") from None
    return value


def platform(value: str) -> str:
    """'linux/arm64' (normalized: 'linux/arm64/v8' reads as 'linux/arm64')."""
    return parse_platform(value).text


Text = Annotated[str, AfterValidator(single_line)]
PlatformText = Annotated[str, AfterValidator(platform)]
Version = Annotated[str, _matching(VERSION_RE, "version", "12.4.1")]
Name = Annotated[str, _matching(NAME_RE, "name (lower case, digits, '.', '_', '-')", "base")]
Tag = Annotated[str, AfterValidator(single_line)]  # checked by TAG_RE after formatting
FieldName = Annotated[
    str, _matching(FIELD_NAME_RE, "field name (letters, digits, '_')", "cuda_toolkit")
]
ArgName = Annotated[str, _matching(ARG_RE, "build-arg name", "MAX_JOBS")]
Repository = Annotated[str, _matching(REPO_RE, "image repository", "127.0.0.1:5000/team")]
AptPackage = Annotated[str, _matching(APT_RE, "Debian package name", "ccache")]
PipRequirement = Annotated[str, AfterValidator(requirement)]
ContextPath = Annotated[
    str,
    _matching(
        CONTEXT_RE, "context path (relative, below the manifest's folder, no '..')", "src/teamlib"
    ),
]
