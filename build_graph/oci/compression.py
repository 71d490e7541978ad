"""How a stack's layers are compressed: images.toml's `[layers]`, as one value.

`gzip` is the default and what every runtime reads. `zstd` is read by containerd >= 1.5
(its differ decompresses `application/vnd.oci.image.layer.v1.tar+zstd`) and Docker Engine
>= 23.0 (moby 23.0 release notes: "Add support for pulling zstd compressed layers"); Docker
20.10, Debian 12's own, cannot pull it. BuildKit's OCI exporter compresses each new layer
once, when it is made (`compression=zstd,compression-level=N`); layers the build did not
make (the base image's, the parent tier's) keep the compression they came with, so nothing
is compressed twice. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Algorithm = Literal["gzip", "zstd"]

# The levels BuildKit's exporter accepts: gzip's 0-9 (Go's compress/gzip), zstd's 1-22
# (BuildKit maps them onto klauspost/compress's four encoder speeds).
LEVELS: dict[str, tuple[int, int]] = {"gzip": (0, 9), "zstd": (1, 22)}

# Where each reads: the README and docs/concepts quote this list.
READERS: dict[str, str] = {
    "gzip": "every runtime",
    "zstd": "containerd >= 1.5 (GKE >= 1.24 nodes run only containerd) and Docker >= 23",
}

_SUFFIX = {"gzip": ("+gzip", ".tar.gzip"), "zstd": ("+zstd",)}


@dataclass(frozen=True)
class Compression:
    """One stack's layer compression; `level` None is BuildKit's default for it."""

    algorithm: Algorithm = "gzip"
    level: int | None = None

    @property
    def is_default(self) -> bool:
        return self.algorithm == "gzip" and self.level is None

    def exporter_fields(self) -> str:
        """The OCI exporter's fields (appended to `--output=type=oci,...`), '' for the
        default: the exporter's own choice then, as before this setting existed."""
        if self.is_default:
            return ""
        level = f",compression-level={self.level}" if self.level is not None else ""
        return f",compression={self.algorithm}{level},oci-mediatypes=true"

    def hash_input(self) -> dict[str, object]:
        """What the tier's content hash reads: nothing for the default, so every stack
        that does not set `[layers]` keeps its hashes and tags."""
        if self.is_default:
            return {}
        return {"compression": [self.algorithm, self.level]}

    def __str__(self) -> str:
        return self.algorithm + (f" level {self.level}" if self.level is not None else "")


DEFAULT = Compression()

ZSTD_SINCE = 23  # moby 23.0.0 release notes: "Add support for pulling zstd compressed layers"


def level_problem(algorithm: str, level: int | None) -> str | None:
    """Why `level` is not one `algorithm` takes, or None."""
    if level is None:
        return None
    low, high = LEVELS[algorithm]
    if not low <= level <= high:
        return f"{algorithm} levels run from {low} to {high}"
    return None


def of_layer(media_type: str) -> str | None:
    """'zstd' / 'gzip' for a compressed layer's media type (OCI and Docker's), None for an
    uncompressed or unknown one."""
    for algorithm, suffixes in _SUFFIX.items():
        if media_type.endswith(suffixes):
            return algorithm
    return None


def unreadable(algorithms: frozenset[str], engine: str) -> str | None:
    """Why a Docker Engine of version `engine` ('20.10.24+dfsg1') cannot pull layers
    compressed so, or None. Docker 20.10 takes a zstd layer for a plain tar and fails with
    "archive/tar: invalid tar header" (seen here with Debian 12's 20.10.24)."""
    if "zstd" not in algorithms:
        return None
    head = engine.split(".", 1)[0]
    if head.isdigit() and int(head) < ZSTD_SINCE:
        return (
            f"this Docker Engine ({engine}) cannot read zstd layers ([layers] compression = "
            f'"zstd"); Docker >= {ZSTD_SINCE}.0 and containerd >= 1.5 can: upgrade the '
            'runner\'s engine, or set compression = "gzip" to rebuild the stack for it'
        )
    return None
