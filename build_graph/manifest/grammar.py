"""Grammars for values that reach a Dockerfile, so none can smuggle in an instruction."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from packaging.requirements import InvalidRequirement, Requirement
from pydantic import AfterValidator

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
VERSION_RE = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+_~-]*$")
NAME_RE = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*$")
TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
APT_RE = re.compile(r"^[a-z0-9][a-z0-9+.-]+(?:=[A-Za-z0-9.+:~-]+)?$")
ARG_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A relative path below the manifest: no absolute paths, no '..', nothing a COPY line or a
# shell would read as more than a path.
CONTEXT_RE = re.compile(r"^(?!/)(?!.*(?:^|/)\.\.(?:/|$))[A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)*/?$")
# A source to clone: https, ssh or git URL (a user name, never a password) with an optional
# @ref; no shell metacharacters and nothing that git could read as an option.
SOURCE_URL_RE = re.compile(r"^(?:https|ssh|git)://(?:[A-Za-z0-9._-]+@)?"
                           r"[A-Za-z0-9][A-Za-z0-9._~:/%+=,-]*"
                           r"(?:@[A-Za-z0-9][A-Za-z0-9._/+-]*)?$")
# A source archive to download (an sdist, a release tarball): an https URL of an archive,
# pinned by the sha256 of its bytes, written as pip writes it (#sha256=<64 hex>).
ARCHIVE_URL_RE = re.compile(r"^https://[A-Za-z0-9][A-Za-z0-9._~:/%+=,-]*"
                            r"\.(?:tar\.gz|tgz|tar\.bz2|tar\.xz|zip)#sha256=[0-9a-f]{64}$")
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_HOST = r"(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::[0-9]+)?/)?"
REPO_RE = re.compile(rf"^{_HOST}{_COMPONENT}(?:/{_COMPONENT})*$")
# Docker's reference grammar (distribution/reference): repository[:tag][@digest].
IMAGE_RE = re.compile(
    rf"^{_HOST}{_COMPONENT}(?:/{_COMPONENT})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"
    r"(?:@sha256:[0-9a-f]{64})?$"
)


SourceKind = Literal["local", "git", "archive"]


def source_kind(source: str) -> SourceKind:
    """'archive' (URL#sha256=...), 'git' (URL[@ref]) or 'local' (a folder below the manifest)."""
    if "://" not in source:
        return "local"
    return "archive" if "#sha256=" in source else "git"


def split_git_source(source: str) -> tuple[str, str]:
    """'https://host/repo@v1' -> ('https://host/repo', 'v1'); no @ref after the host means
    HEAD ('ssh://git@host/repo' is a user name, not a ref)."""
    _, _, rest = source.partition("://")
    host_end = rest.find("/")
    path = rest[host_end:] if host_end >= 0 else ""
    if "@" not in path:
        return source, "HEAD"
    head, _, ref = source.rpartition("@")
    return head, ref


def _matching(pattern: re.Pattern[str], what: str, example: str) -> AfterValidator:
    def check(value: str) -> str:
        if not pattern.match(value):
            raise ValueError(f"{value!r} is not a valid {what} (for example {example!r})")
        return value

    return AfterValidator(check)


def single_line(value: str) -> str:
    """Reject newlines and control characters (they could start a Dockerfile instruction)."""
    if _CONTROL.search(value):
        raise ValueError(f"{value!r} contains a newline or control character")
    return value


_FIELD = re.compile(r"\{[A-Za-z0-9_]+\}")


def requirement(value: str) -> str:
    """A pip requirement ('numpy<2', 'torch==2.6.0', 'torch=={torch}'): PEP 508, single
    line; a {field} is checked as a version here and the filled text again on resolve."""
    single_line(value)
    try:
        Requirement(_FIELD.sub("0", value))
    except InvalidRequirement as exc:
        raise ValueError(f"{value!r} is not a pip requirement: {exc}") from None
    return value


Text = Annotated[str, AfterValidator(single_line)]
Version = Annotated[str, _matching(VERSION_RE, "version", "12.4.1")]
Name = Annotated[str, _matching(NAME_RE, "name (lower case, digits, '.', '_', '-')", "base")]
Tag = Annotated[str, AfterValidator(single_line)]  # checked by TAG_RE after formatting
ArgName = Annotated[str, _matching(ARG_RE, "build-arg name", "MAX_JOBS")]
Repository = Annotated[str, _matching(REPO_RE, "image repository", "127.0.0.1:5000/team")]
AptPackage = Annotated[str, _matching(APT_RE, "Debian package name", "ccache")]
PipRequirement = Annotated[str, AfterValidator(requirement)]
ContextPath = Annotated[str, _matching(
    CONTEXT_RE, "context path (relative, below the manifest's folder, no '..')", "src/teamlib")]
