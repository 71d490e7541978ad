"""The rules every value obeys, and the grammars of the values that reach a Dockerfile.

Pure (regular expressions and the standard library): the plan's fast path, images.lock's
reader and the pins use these without importing pydantic. manifest/grammar.py turns them
into the annotated types the schema validates with.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Mapping
from typing import Literal

from build_graph.manifest.model import Source
from build_graph.oci.tags import TAG  # the registry's tag grammar has one owner

# Unicode categories no value may hold: controls (Cc: newline, tab, NUL, U+0085), format
# characters (Cf: zero-width and bidi marks, BOM), line and paragraph separators (Zl, Zp:
# U+2028, U+2029), surrogates (Cs). Some end a line for a shell or an editor, the others
# make a value read differently from what it is.
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
FIELD_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What images.lock pins a source to: a git commit (SHA-1 or SHA-256); an image's pin is a
# Digest (oci/digest.py, the one validator of digests).
COMMIT_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
VERSION_RE = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+_~-]*$")
NAME_RE = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*$")
TAG_RE = re.compile(rf"^{TAG.pattern}$")
APT_RE = re.compile(r"^[a-z0-9][a-z0-9+.-]+(?:=[A-Za-z0-9.+:~-]+)?$")
ARG_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A relative path below the manifest: no absolute paths, no '..', nothing a COPY line or a
# shell would read as more than a path.
CONTEXT_RE = re.compile(r"^(?!/)(?!.*(?:^|/)\.\.(?:/|$))[A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)*/?$")
# A source to clone: https, ssh or git URL (a user name, never a password) with an optional
# @ref; no shell metacharacters and nothing that git could read as an option.
SOURCE_URL_RE = re.compile(
    r"^(?:https|ssh|git)://(?:[A-Za-z0-9._-]+@)?"
    r"[A-Za-z0-9][A-Za-z0-9._~:/%+=,-]*"
    r"(?:@[A-Za-z0-9][A-Za-z0-9._/+-]*)?$"
)
# A source archive to download (an sdist, a release tarball): an https URL of an archive,
# pinned by the sha256 of its bytes, written as pip writes it (#sha256=<64 hex>).
ARCHIVE_URL_RE = re.compile(
    r"^https://[A-Za-z0-9][A-Za-z0-9._~:/%+=,-]*"
    r"\.(?:tar\.gz|tgz|tar\.bz2|tar\.xz|zip)#sha256=[0-9a-f]{64}$"
)
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_HOST = r"(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::[0-9]+)?/)?"
REPO_RE = re.compile(rf"^{_HOST}{_COMPONENT}(?:/{_COMPONENT})*$")
# Docker's reference grammar (distribution/reference): repository[:tag][@digest].
IMAGE_RE = re.compile(
    rf"^{_HOST}{_COMPONENT}(?:/{_COMPONENT})*(?::{TAG.pattern})?"
    r"(?:@sha256:[0-9a-f]{64})?$"
)


SourceKind = Literal["local", "git", "archive"]


def source_kind(source: str) -> SourceKind:
    """'archive' (URL#sha256=...), 'git' (URL[@ref]) or 'local' (a folder below the manifest)."""
    if "://" not in source:
        return "local"
    return "archive" if "#sha256=" in source else "git"


def parse_source(name: str, text: str) -> Source:
    """A `compile.sources` entry (version fields filled) as a typed Source, its kind decided
    here once."""
    kind = source_kind(text)
    if kind == "git":
        url, ref = split_git_source(text)
        return Source(name, text, kind, url, ref=ref)
    if kind == "archive":
        url, _, digest = text.partition("#sha256=")
        return Source(name, text, kind, url, sha256=digest)
    return Source(name, text, kind, text.strip("/") or text)


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


def conforms(pattern: re.Pattern[str], value: str) -> bool:
    """True when all of `value` matches `pattern` and it holds no forbidden character.

    fullmatch, not match: a pattern ending in '$' also matches before a trailing newline."""
    return pattern.fullmatch(value) is not None and forbidden_character(value) is None


def forbidden_character(value: str) -> str | None:
    """'U+2028 (LINE SEPARATOR)' for the first character no value may hold; None if none."""
    for char in value:
        if unicodedata.category(char) in _FORBIDDEN_CATEGORIES:
            name = unicodedata.name(char, "control character")
            return f"U+{ord(char):04X} ({name})"
    return None


def single_line(value: str) -> str:
    """The one rule every value obeys: no newline, control, format or line/paragraph
    separator character (any of them could end a Dockerfile line and start an instruction,
    or hide what a value says). Raises ValueError naming the character."""
    found = forbidden_character(value)
    if found is not None:
        raise ValueError(
            f"{value!r} contains a newline or control character ({found}); "
            "values are one line of printable text"
        )
    return value


def field_names(text: str) -> list[str]:
    """The {name} fields of `text`, in order. Raises ValueError for anything else in braces
    (a format spec, a conversion, an attribute or an index) or an unpaired brace: only
    plain {name} is filled, so no value can be formatted into something else."""
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise ValueError(f"{text!r}: {exc}; write a field as {{name}} ({{{{ for a brace)") from None
    names = []
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        if spec or conversion or not FIELD_NAME_RE.fullmatch(name):
            written = (
                "{"
                + name
                + (f"!{conversion}" if conversion else "")
                + (f":{spec}" if spec else "")
                + "}"
            )
            raise ValueError(
                f"{text!r}: {written} is not a field: only {{name}} is allowed "
                "(no format spec, conversion, attribute or index)"
            )
        names.append(name)
    return names


def fill_fields(text: str, fields: Mapping[str, str]) -> str:
    """`text` with each {name} replaced by its value, verbatim (no str.format semantics).
    Raises ValueError for bad field syntax (see field_names) and KeyError for an unknown
    name."""
    field_names(text)
    return "".join(
        literal + (fields[name] if name is not None else "")
        for literal, name, _, _ in string.Formatter().parse(text)
    )


_DURATION_RE = re.compile(r"(\d{1,9})([dhms])")
_UNIT_S = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_duration(text: str) -> float | None:
    """'14d', '12h', '30m', '90s', '0s' -> seconds; None if unparseable (images.toml's
    `[cache] save_every`, `prune --older-than`)."""
    match = _DURATION_RE.fullmatch(text.strip())
    return float(int(match[1]) * _UNIT_S[match[2]]) if match else None
