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
from typing import Any

from build_graph.errors import RegistryError, UntrustedAnswer
from build_graph.oci import json_door
from build_graph.oci.contents import OCI_MANIFEST
from build_graph.oci.digest import Digest, parse_digest
from build_graph.oci.refs import Ref, artifact_tag
from build_graph.registry import api

SUFFIX = "att"
ENVELOPE_TYPE = "application/vnd.dsse.envelope.v1+json"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
SIGNATURE = "dev.cosignproject.cosign/signature"  # cosign marks each layer with it (empty)
FINGERPRINT = "dev.build-graph.fingerprint"
_ZERO = "0001-01-01T00:00:00Z"  # what cosign states as `created`: nothing dates these


def attach(image: Ref, subject: Digest, envelope: bytes, predicate_type: str, key: str) -> None:
    """Put `envelope` (a signed DSSE envelope about `subject`, made by the verifier `key`)
    in its `.att` image, in place of every earlier one of `predicate_type`."""
    ref = image.at(artifact_tag(subject, SUFFIX))
    layers = [
        layer for layer in _layers(ref) if _annotation(layer, "predicateType") != predicate_type
    ]
    blob = api.put_blob(image, envelope)
    layers.append(
        {
            "mediaType": ENVELOPE_TYPE,
            "size": len(envelope),
            "digest": str(blob),
            "annotations": {SIGNATURE: "", "predicateType": predicate_type, FINGERPRINT: key},
        }
    )
    config = json.dumps(
        {
            "architecture": "",
            "os": "",
            "created": _ZERO,
            "history": [{"created": _ZERO}],
            "rootfs": {"type": "layers", "diff_ids": [layer["digest"] for layer in layers]},
            "config": {},
        },
        separators=(",", ":"),
    ).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {
            "mediaType": CONFIG_TYPE,
            "size": len(config),
            "digest": str(api.put_blob(image, config)),
        },
        "layers": layers,
    }
    api.put_manifest(ref, json.dumps(manifest, separators=(",", ":")).encode(), OCI_MANIFEST)


def _layers(ref: Ref) -> list[dict[str, Any]]:
    """The layers the `.att` image has now (none when absent); a manifest that is not an
    image of descriptors is replaced, not merged (its layers are unreadable to every reader)."""
    answer = api.head_manifest(ref)
    if answer.digest is None:
        if answer.error is not None:
            raise RegistryError(answer.error)
        return []
    try:
        layers = json_door.loads(api.get_manifest(ref).body).get("layers")
        kept = [layer for layer in layers if isinstance(layer, dict)]
        for layer in kept:
            parse_digest(str(layer.get("digest")))
        return kept
    except (UntrustedAnswer, ValueError, AttributeError, TypeError):
        return []


def _annotation(layer: dict[str, Any], name: str) -> object:
    annotations = layer.get("annotations")
    return annotations.get(name) if isinstance(annotations, dict) else None
