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


def unreadable(algorithms: frozenset[str], engine: str, chosen: Compression) -> str | None:
    """Why the Docker Engine `engine` ('20.10.24+dfsg1'; '' for another engine, such as
    Podman's Docker API, which is not judged by its number) cannot pull layers compressed
    so, or None. `chosen` is the stack's setting, to say where the zstd layers come from."""
    head = engine.split(".", 1)[0]
    if "zstd" not in algorithms or not head.isdigit() or int(head) >= ZSTD_SINCE:
        return None
    return f"this Docker Engine ({engine}) cannot read zstd layers; " + _fix(chosen)


def unread_layer(said: str, algorithms: frozenset[str], chosen: Compression) -> str | None:
    """A pull's failure in the engine's own words, when they show it could not decompress
    a zstd layer (Docker 20.10: "archive/tar: invalid tar header"); None for any other
    failure (a registry that did not answer stays that)."""
    if "zstd" not in algorithms or not any(sign in said for sign in DECOMPRESSION_FAILED):
        return None
    return f"the engine could not unpack its zstd layers ({said[:200]}); " + _fix(chosen)


# What engines say when a layer's compression is one they cannot read.
# Not the bare word "zstd": a reference or URL in the message may hold it, and a current
# engine's "zstd: magic number mismatch" is a damaged blob, not an old engine.
DECOMPRESSION_FAILED = ("invalid tar header", "unsupported media type")


def _fix(chosen: Compression) -> str:
    readers = f"Docker >= {ZSTD_SINCE}.0 and containerd >= 1.5 read them"
    if chosen.algorithm == "zstd":
        return (
            f'{readers}: upgrade the runner\'s engine, or set [layers] compression = "gzip" '
            "to rebuild the stack for it"
        )
    return f"they come from the base image (`from`): {readers}; upgrade the runner's engine"
