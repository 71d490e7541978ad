"""Content hashes of a tier's inputs; the hash becomes the tier's immutable image tag."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from build_graph import __version__

# Bump when the meaning of the hash changes, so every tag changes with it.
HASH_SCHEMA = "1"
TAG_LENGTH = 20  # hex digits: 80 bits, far from collisions for any stack's history
_SKIP_DIRS = {"__pycache__", ".git", ".mypy_cache", ".pytest_cache", ".ruff_cache"}


@dataclass(frozen=True)
class FileDigest:
    path: str  # relative to the manifest's folder, '/'-separated
    executable: bool
    sha256: str


def iter_context_files(root: Path, entries: Iterable[str]) -> Iterator[tuple[str, Path]]:
    """(relative name, absolute path) of every file under the context entries, sorted."""
    for entry in entries:
        base = root / entry
        if base.is_file():
            yield entry, base
            continue
        found: list[Path] = []
        for folder, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
            found.extend(Path(folder) / f for f in files if not f.endswith(".pyc"))
        for path in sorted(found):
            yield path.relative_to(root).as_posix(), path


def file_digest(name: str, path: Path) -> FileDigest:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return FileDigest(name, os.access(path, os.X_OK), digest.hexdigest())


def content_hash(parts: dict[str, object]) -> str:
    """A short hex digest of a JSON-able description of a tier's inputs."""
    payload = {"schema": HASH_SCHEMA, "tool": __version__, **parts}
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=_encode)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:TAG_LENGTH]


def _encode(value: object) -> object:
    if isinstance(value, FileDigest):
        return [value.path, value.executable, value.sha256]
    raise TypeError(f"cannot hash {type(value).__name__}")
