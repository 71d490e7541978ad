"""Content hashes of a tier's inputs; the hash becomes the tier's immutable image tag."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

# Bump when the meaning of the hash changes, so every tag changes with it. Deliberately
# not the tool's version: upgrading build-graph must not recompile PyTorch. 2: contexts
# without .git/.env/.dockerignore'd files; no tool version.
HASH_SCHEMA = "2"
TAG_LENGTH = 20  # hex digits: 80 bits, far from collisions for any stack's history


@dataclass(frozen=True)
class FileDigest:
    path: str  # relative to the manifest's folder, '/'-separated
    executable: bool
    sha256: str


def file_digest(name: str, path: Path) -> FileDigest:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return FileDigest(name, os.access(path, os.X_OK), digest.hexdigest())


def content_hash(parts: dict[str, object]) -> str:
    """A short hex digest of a JSON-able description of a tier's inputs."""
    payload = {"schema": HASH_SCHEMA, **parts}
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=_encode)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:TAG_LENGTH]


def _encode(value: object) -> object:
    if isinstance(value, FileDigest):
        return [value.path, value.executable, value.sha256]
    raise TypeError(f"cannot hash {type(value).__name__}")


# A heredoc opener as a plain shell word: <<EOF, <<-EOF, <<"EOF", <<'EOF'
# (https://docs.docker.com/reference/dockerfile/#here-documents).
_HEREDOC = re.compile(r"(?:^|(?<=\s))<<(-?)([\"']?)([A-Za-z_][A-Za-z0-9_]*)\2(?=\s|$)")
_DIRECTIVE = re.compile(r"#\s*[A-Za-z_]+\s*=")
_ESCAPE = re.compile(r"#\s*escape\s*=", re.IGNORECASE)  # BuildKit reads directives so
_BLANK = " \t\r"  # what may stand before a comment's '#' here (BuildKit takes more: safe)


def instructions(dockerfile: str) -> str:
    """What BuildKit reads of a Dockerfile: its parser directives (and a first-line `#!`)
    and instructions, without comment lines and blank lines, so a comment (or a file name
    in one) never changes a tag. Here-document bodies are kept byte for byte, since there a
    '#' line is content. Only ever drops lines, and only where the Dockerfile's shape is
    plain: where a heredoc is written in any other form than a plain `<<NAME` word (quoted,
    escaped, split over lines, inside quotes) or an escape directive changes the line
    continuation, the whole text is hashed as it is (hashing more is always safe)."""
    lines = dockerfile.split("\n")  # BuildKit's line breaks: '\n' only
    # A byte-order mark (BuildKit drops it before the directives) or a '\r' anywhere
    # (BuildKit trims it off heredoc terminators): not plain, hashed whole
    if dockerfile.startswith("\ufeff") or "\r" in dockerfile or not _plain(lines):
        return dockerfile
    kept: list[str] = []
    closing: list[tuple[str, bool]] = []  # heredoc terminators still to come, in order
    directives = True
    for number, line in enumerate(lines):
        if closing:
            kept.append(line)
            word, dash = closing[0]
            if (line.lstrip("\t") if dash else line) == word:
                closing.pop(0)
            continue
        stripped = line.strip(_BLANK)
        if directives and (_DIRECTIVE.match(stripped) or (number == 0 and line.startswith("#!"))):
            kept.append(line)
            continue
        directives = False
        if not stripped or stripped.startswith("#"):
            continue
        kept.append(line)
        closing.extend((m.group(3), m.group(1) == "-") for m in _HEREDOC.finditer(line))
    return "\n".join(kept)


def _plain(lines: list[str]) -> bool:
    """Whether every `<<` outside a comment line is a plain heredoc word on a line that
    ends there (not split over lines, not inside quotes), and no escape directive is set."""
    for line in lines:
        stripped = line.strip(_BLANK)
        if _ESCAPE.match(stripped):
            return False
        if "<<" not in line or stripped.startswith("#"):
            continue
        openers = list(_HEREDOC.finditer(line))
        if line.count("<<") != len(openers) or line.rstrip(_BLANK).endswith("\\"):
            return False
        for opener in openers:
            before = line[: opener.start()]
            if before.count('"') % 2 or before.count("'") % 2:
                return False
    return True


# An ADD whose source is a URL or a git repository: BuildKit fetches it itself, outside any
# RUN step's network namespace, so `--network=none` does not stop it.
_ADD_REMOTE = re.compile(r"^ADD\s[^\n]*?(?:[a-zA-Z][a-zA-Z0-9+.-]*://|git@)[^\n]*", re.I | re.M)


def fetches_itself(dockerfile: str) -> str | None:
    """Why a hermetic stack cannot build `dockerfile` (its first remote ADD), or None."""
    found = _ADD_REMOTE.search(dockerfile)
    if found is None:
        return None
    return (
        f"`{found[0].strip()[:120]}`: BuildKit fetches an ADD of a URL or git repository "
        "itself, with no lock and past the build's --network=none; in a hermetic stack "
        "name it as a compile source with its sha256 (fetched and checked before the "
        "build) or set [stack] hermetic = false"
    )
