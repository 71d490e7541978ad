"""Content hashes of a tier's inputs; the hash becomes the tier's immutable image tag."""

from __future__ import annotations

import hashlib
import json
import os
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
