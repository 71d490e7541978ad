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
import json
from dataclasses import dataclass
from typing import Any

from build_graph.oci import json_door
from build_graph.oci.contents import OCI_INDEX, OCI_MANIFEST
from build_graph.oci.digest import Digest, parse_digest


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

    def entry(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "mediaType": OCI_MANIFEST,
            "digest": str(self.digest),
            "size": self.size,
            "artifactType": self.artifact_type,
        }
        if self.annotations:
            document["annotations"] = dict(self.annotations)
        return document


def entries(body: bytes) -> list[dict[str, Any]]:
    """The entries of a referrers index as stored (bytes hashed at the door); ValueError, in
    words, for anything that is not an image index of descriptors with digests."""
    try:
        document = json_door.loads(body)
    except ValueError:
        raise ValueError("the referrers index is not JSON") from None
    if not isinstance(document, dict) or document.get("mediaType", OCI_INDEX) != OCI_INDEX:
        raise ValueError("the referrers tag names something that is not an OCI image index")
    manifests = document.get("manifests", [])
    if not isinstance(manifests, list):
        raise ValueError("the referrers index's manifests is not a list")
    for entry in manifests:
        if not isinstance(entry, dict):
            raise ValueError("a referrers index entry is not an object")
        parse_digest(str(entry.get("digest", "")))
    return manifests


def is_referrers_index(listed: list[dict[str, Any]]) -> bool:
    """Whether entries read from a referrers tag are a referrers list: every entry an
    artifact (it states an artifact type) and none a platform image. An image's own index
    (the containerd store pushes one per image) is not, and must never be merged into or
    deleted as one, whatever tag names it."""
    return all(
        isinstance(entry.get("artifactType"), str) and "platform" not in entry for entry in listed
    )


def subject_of(body: bytes) -> Digest | None:
    """The digest a manifest names as its `subject`; None when it names none (or is not a
    manifest at all)."""
    try:
        document = json_door.loads(body)
        return parse_digest(str(document["subject"]["digest"]))
    except (ValueError, KeyError, TypeError):
        return None


DSSE_ENVELOPE = "application/vnd.dsse.envelope.v1+json"


def envelope_layers(body: bytes) -> list[Digest] | None:
    """The layers of cosign's `.att` image (an image whose every layer is a DSSE envelope);
    None for anything else."""
    try:
        layers = json_door.loads(body).get("layers")
        if not layers or not all(
            isinstance(layer, dict) and layer.get("mediaType") == DSSE_ENVELOPE for layer in layers
        ):
            return None
        return [parse_digest(str(layer["digest"])) for layer in layers]
    except (ValueError, AttributeError, TypeError, KeyError):
        return None


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


def referrers(listed: list[dict[str, Any]]) -> list[Referrer]:
    """The entries as typed values (an entry without a size or type reads as 0 or '')."""
    found = []
    for entry in listed:
        annotations = entry.get("annotations")
        size = entry.get("size")
        found.append(
            Referrer(
                parse_digest(str(entry["digest"])),
                size if isinstance(size, int) else 0,
                str(entry.get("artifactType", "")),
                {str(k): str(v) for k, v in annotations.items()}
                if isinstance(annotations, dict)
                else {},
            )
        )
    return found


def index(listed: list[dict[str, Any]]) -> bytes:
    """A referrers index holding `listed`."""
    document = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": listed}
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def with_entry(listed: list[dict[str, Any]], referrer: Referrer) -> list[dict[str, Any]] | None:
    """`listed` plus `referrer`; None when it is listed already (nothing to write)."""
    if any(entry.get("digest") == str(referrer.digest) for entry in listed):
        return None
    return [*listed, referrer.entry()]


def without(listed: list[dict[str, Any]], gone: set[Digest]) -> list[dict[str, Any]]:
    """`listed` less the entries of `gone`."""
    names = {str(d) for d in gone}
    return [entry for entry in listed if entry.get("digest") not in names]
