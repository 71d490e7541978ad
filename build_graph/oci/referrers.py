"""The OCI 1.1 referrers index of a subject: its entries, read and amended. Pure.

An artifact about an image (a verify report, an SBOM, a signature) names the image as its
`subject`. A registry with the referrers API lists such artifacts itself; on one without
(CNCF distribution 2.8), the client that pushes one keeps the list in an image index tagged
`sha256-<hex of the subject>` (distribution spec 1.1, "Referrers Tag Schema"), which `oras
discover` and cosign read. Other tools write entries there too: entries are kept as written
and only ours are added or removed.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass

from build_graph.oci import json_door
from build_graph.oci.digest import Digest, parse_digest
from build_graph.oci.documents import (
    DSSE_ENVELOPE,
    OCI_INDEX,
    OCI_MANIFEST,
    Descriptor,
    Index,
    Manifest,
    parse_document,
    parse_index,
)


def fallback_tag(subject: Digest) -> str:
    """The referrers tag of `subject`: 'sha256-<hex>'."""
    return subject.dashed


@dataclass(frozen=True)
class Referrer:
    """One entry of a referrers index: an artifact manifest about the subject."""

    digest: Digest
    size: int
    artifact_type: str
    annotations: dict[str, str]

    def entry(self) -> Descriptor:
        """Its entry in a referrers index."""
        return Descriptor(
            self.digest,
            OCI_MANIFEST,
            self.size,
            artifact_type=self.artifact_type,
            annotations=tuple(self.annotations.items()),
        )


def entries(body: bytes) -> list[Descriptor]:
    """The entries of a referrers index as stored (bytes hashed at the door), each kept as
    written; ValueError, in words, for anything that is not an image index of descriptors
    with digests."""
    try:
        value = json_door.loads(body)
    except ValueError:
        raise ValueError("the referrers index is not JSON") from None
    try:
        document = parse_index(value)
    except ValueError as exc:
        raise ValueError(f"the referrers index is unreadable: {exc}") from None
    if document.media_type not in (None, OCI_INDEX):
        raise ValueError("the referrers tag names something that is not an OCI image index")
    return list(document.manifests)


def is_referrers_index(listed: Sequence[Descriptor]) -> bool:
    """Whether entries read from a referrers tag are a referrers list: every entry an
    artifact (it states an artifact type) and none a platform image. An image's own index
    (the containerd store pushes one per image) is not, and must never be merged into or
    deleted as one, whatever tag names it."""
    return all(entry.artifact_type is not None and entry.platform is None for entry in listed)


def subject_of(body: bytes) -> Digest | None:
    """The digest a manifest names as its `subject`; None when it names none (or is not a
    manifest at all)."""
    try:
        subject = parse_document(body).subject
    except ValueError:
        return None
    return None if subject is None else subject.digest


def envelope_layers(body: bytes) -> list[Digest] | None:
    """The layers of cosign's `.att` image (an image whose every layer is a DSSE envelope);
    None for anything else."""
    try:
        document = parse_document(body)
    except ValueError:
        return None
    if not isinstance(document, Manifest) or not document.layers:
        return None
    if not all(layer.media_type == DSSE_ENVELOPE for layer in document.layers):
        return None
    return [layer.digest for layer in document.layers]


def envelope_subject(blob: bytes) -> Digest | None:
    """The one subject of the in-toto Statement a DSSE envelope carries; None when there is
    not exactly one, or the envelope is unreadable."""
    try:
        envelope = json_door.loads(blob)
        statement = json_door.loads(base64.b64decode(envelope["payload"], validate=True))
        [subject] = statement["subject"]
        return parse_digest(f"sha256:{subject['digest']['sha256']}")
    except (ValueError, KeyError, TypeError, binascii.Error):
        return None


def referrers(listed: Sequence[Descriptor]) -> list[Referrer]:
    """The entries as typed values (an entry without a size or type reads as 0 or '')."""
    return [
        Referrer(
            entry.digest,
            entry.size or 0,
            entry.artifact_type or "",
            dict(entry.annotations),
        )
        for entry in listed
    ]


def index(listed: Sequence[Descriptor]) -> bytes:
    """A referrers index holding `listed` (others' entries as they wrote them)."""
    return Index(tuple(listed), OCI_INDEX).encode("sorted")


def with_entries(
    listed: Sequence[Descriptor], added: Sequence[Referrer]
) -> list[Descriptor] | None:
    """`listed` plus each of `added` it lacks; None when all are listed (nothing to write)."""
    there = {entry.digest for entry in listed}
    missing = {r.digest: r.entry() for r in added if r.digest not in there}
    return [*listed, *missing.values()] if missing else None


def without(listed: Sequence[Descriptor], gone: set[Digest]) -> list[Descriptor]:
    """`listed` less the entries of `gone`."""
    return [entry for entry in listed if entry.digest not in gone]
