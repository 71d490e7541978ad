"""What one build asks BuildKit for, as one typed value: the context, the tag, the build's
settings and where the image goes (`Output`). `docker/buildkit.py` turns it into the
command line; `stages/build_act.build_request` fills it from a planned tier, for the build
stage and for `reproduce` alike, which differ only in the output they ask for.
Plain values: no manifest, no plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from build_graph.oci.compression import DEFAULT as GZIP
from build_graph.oci.compression import Compression


@dataclass(frozen=True)
class Loaded:
    """The image loaded into the engine and tagged there (`--load -t TAG`): where builds
    do not come out the same on every machine (buildkit.reproducible_here)."""


@dataclass(frozen=True)
class Layout:
    """A reproducible build: BuildKit's OCI exporter writes the image into the tier's OCI
    layout at `path` (seeded with the blobs of `parent`, the parent tier's layout:
    oci_layout.py), and the engine `docker load`s it from there."""

    path: Path
    parent: Path | None = None


@dataclass(frozen=True)
class Archive:
    """An OCI archive at `path`, built without BuildKit's cache, neither loaded nor tagged:
    `reproduce`'s rebuild."""

    path: Path


Output = Loaded | Layout | Archive


@dataclass(frozen=True, kw_only=True)
class BuildRequest:
    """One build: `context` is the tar stream (the Dockerfile at its root), `tag` the image's
    name, `name` the tier's key (for log lines and messages); `secrets` reach RUN steps as
    files, never a layer; `network` "none" (a hermetic stack): no RUN step reaches any
    network, loopback included, and a step that tries fails the build, named;
    `compression` applies to the layers the build makes, only where the OCI exporter
    writes them (`Layout`, `Archive`: oci/compression.py)."""

    context: IO[bytes]
    tag: str
    name: str
    buildargs: Mapping[str, str]
    secrets: Mapping[str, str] = field(repr=False)  # a pip.conf may carry index credentials
    platform: str | None = None
    network: str = "host"
    compression: Compression = GZIP
    output: Output = Loaded()
