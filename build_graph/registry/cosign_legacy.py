"""cosign's older attestation layout, beside the referrers: for readers that look nowhere
else (Kyverno's ClusterPolicy `verifyImages.attestations`, cosign 2.x).

The tag `sha256-<hex of the image>.att` names an image manifest whose layers are DSSE
envelopes (`application/vnd.dsse.envelope.v1+json`, annotated with cosign's signature
marker and the predicate type), one per attestation (cosign's specs/ATTESTATION_SPEC.md).
Other tools' layers are kept; ours is the latest report alone (a digest is verified again
only by a runner that does not trust the report there: a GPU runner after a CPU runner, or
after the promises changed), so a report made under older promises does not linger for a
policy to accept. Two runners writing at once can lose one layer (no lock on a registry):
the report that stays is one of theirs. cosign 3.1.1 verifies this layout with
`verify-attestation --key` as it does the bundle (tried here). What is there is read at the
door: an unreadable or oversized manifest, or one that is no image of layers, is replaced.
"""

from __future__ import annotations

import json

from build_graph.errors import RegistryError, UntrustedAnswer
from build_graph.oci.digest import Digest
from build_graph.oci.documents import (
    DSSE_ENVELOPE,
    OCI_CONFIG,
    OCI_MANIFEST,
    Descriptor,
    Manifest,
    parse_manifest,
)
from build_graph.oci.refs import Ref, artifact_tag
from build_graph.registry import api

SUFFIX = "att"
SIGNATURE = "dev.cosignproject.cosign/signature"  # cosign marks each layer with it (empty)
FINGERPRINT = "dev.build-graph.fingerprint"
_ZERO = "0001-01-01T00:00:00Z"  # what cosign states as `created`: nothing dates these


def attach(image: Ref, subject: Digest, envelope: bytes, predicate_type: str, key: str) -> None:
    """Put `envelope` (a signed DSSE envelope about `subject`, made by the verifier `key`)
    in its `.att` image, in place of every earlier one of `predicate_type`."""
    ref = image.at(artifact_tag(subject, SUFFIX))
    layers = [
        layer for layer in _layers(ref) if layer.annotation("predicateType") != predicate_type
    ]
    said = ((SIGNATURE, ""), ("predicateType", predicate_type), (FINGERPRINT, key))
    layers.append(
        Descriptor(api.put_blob(image, envelope), DSSE_ENVELOPE, len(envelope), None, said)
    )
    config = _config(layers)
    manifest = Manifest(
        Descriptor(api.put_blob(image, config), OCI_CONFIG, len(config)),
        tuple(layers),
        OCI_MANIFEST,
    )
    api.put_manifest(ref, manifest.encode("compact"), OCI_MANIFEST)


def _config(layers: list[Descriptor]) -> bytes:
    """The `.att` image's config as cosign writes it: no platform, no date, one diff_id a layer."""
    return json.dumps(
        {
            "architecture": "",
            "os": "",
            "created": _ZERO,
            "history": [{"created": _ZERO}],
            "rootfs": {"type": "layers", "diff_ids": [str(layer.digest) for layer in layers]},
            "config": {},
        },
        separators=(",", ":"),
    ).encode()


def _layers(ref: Ref) -> list[Descriptor]:
    """The layers the `.att` image has now (none when absent), each as written; a manifest
    that is not an image of descriptors is replaced, not merged (its layers are unreadable
    to every reader)."""
    answer = api.head_manifest(ref)
    if answer.digest is None:
        if answer.error is not None:
            raise RegistryError(answer.error)
        return []
    try:
        return list(parse_manifest(api.get_manifest(ref).body).layers or ())
    except (UntrustedAnswer, ValueError):
        return []
