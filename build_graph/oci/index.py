"""A multi-platform tag's bytes: the image index referring to one verified image per platform.

Made here from each platform image's manifest as read by digest (its bytes hashed at the
door, registry/api.py; size and media type those of the bytes: stages/promote.py's
entry_of), deterministically: the same platform images give the same bytes, so the same
digest, on every runner. That is how a fresh runner
tells that a human tag already names the index it would write, without reading it back.

Docker's manifest list when every platform image is a Docker manifest (what `docker push`
of this daemon's images sends), the OCI image index otherwise; either way each entry has the
media type the registry gave for it (OCI image spec, image-index.md; Docker's manifest list
v2 schema 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from build_graph.oci import documents
from build_graph.oci.digest import Digest
from build_graph.oci.documents import (
    DOCKER_LIST,
    DOCKER_MANIFEST,
    INDEX_TYPES,
    OCI_INDEX,
    OCI_MANIFEST,
    Descriptor,
)
from build_graph.oci.platforms import Platform

__all__ = [
    "DOCKER_LIST",
    "DOCKER_MANIFEST",
    "INDEX_TYPES",
    "OCI_INDEX",
    "OCI_MANIFEST",
    "Entry",
    "Index",
    "build_index",
]


@dataclass(frozen=True)
class Entry:
    """One platform's image as the registry holds it."""

    platform: Platform
    digest: Digest
    size: int
    media_type: str


@dataclass(frozen=True)
class Index:
    body: bytes
    media_type: str
    digest: Digest


def build_index(entries: Sequence[Entry], attestations: Sequence[Descriptor] = ()) -> Index:
    """The index of `entries`, in their order (images.toml's order of platforms), then the
    `attestations` about them (BuildKit's provenance, as its own index had them: platform
    `unknown/unknown`, so no runtime pulls one; engines old and new skip them). ValueError
    for an entry that is itself an index, two entries of one platform, or an attestation
    about no entry."""
    platforms = [e.platform for e in entries]
    if len(set(platforms)) != len(platforms):
        raise ValueError(f"two images of one platform: {', '.join(p.text for p in platforms)}")
    for entry in entries:
        if entry.media_type not in (DOCKER_MANIFEST, OCI_MANIFEST):
            raise ValueError(
                f"{entry.digest} ({entry.platform.text}) is a "
                f"{entry.media_type or 'manifest of no stated kind'}, not one "
                "platform's image manifest"
            )
    digests = {e.digest for e in entries}
    for attestation in attestations:
        if attestation.about not in digests:
            raise ValueError(
                f"the attestation {attestation.digest} is about "
                f"{attestation.about}, which is no entry of this index"
            )
    docker = not attestations and all(e.media_type == DOCKER_MANIFEST for e in entries)
    media_type = DOCKER_LIST if docker else OCI_INDEX
    document = documents.Index(
        (
            *(Descriptor(e.digest, e.media_type, e.size, e.platform.text) for e in entries),
            *(_restated(a) for a in attestations),
        ),
        media_type,
    )
    body = document.encode("indented")
    return Index(body, media_type, Digest.of(body))


def _restated(attestation: Descriptor) -> Descriptor:
    """An attestation's entry as its fields say it, never as the index it came from wrote it:
    what promote has always written (nothing else BuildKit's entry carried rides along)."""
    return Descriptor(
        attestation.digest,
        attestation.media_type,
        attestation.size,
        attestation.platform,
        attestation.annotations,
    )
