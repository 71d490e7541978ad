"""Small OCI artifacts about an image (verify reports), bound to the image's digest.

Each artifact is an OCI image manifest whose `subject` is the image: a registry with the
OCI 1.1 referrers API lists it among the image's referrers by itself. It is found again by
a tag built from the image's digest (cosign's scheme, `sha256-<hex>.<suffix>`), which every
registry serves, CNCF distribution 2.8 included; so lookups never depend on referrers.
"""

from __future__ import annotations

import json

from build_graph.errors import RegistryError
from build_graph.registry import api as registry_http
from build_graph.registry.refs import Probe, Ref, artifact_tag

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
# The OCI 1.1 empty descriptor, the config of an artifact that has none.
EMPTY_TYPE = "application/vnd.oci.empty.v1+json"
EMPTY = b"{}"


def publish(image: Ref, subject: Probe, suffix: str, artifact_type: str, payload: bytes,
            annotations: dict[str, str]) -> tuple[str, str]:
    """Push `payload` as an artifact about `subject` (the image's manifest); returns (its
    tag, its manifest digest)."""
    if subject.digest is None or subject.media_type is None or subject.size is None:
        raise RegistryError(f"{image.repository}: the registry did not describe the image's "
                            "manifest (digest, media type, size) that the artifact refers to")
    config = registry_http.put_blob(image, EMPTY)
    layer = registry_http.put_blob(image, payload)
    manifest = {
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": artifact_type,
        "config": {"mediaType": EMPTY_TYPE, "digest": config, "size": len(EMPTY)},
        "layers": [{"mediaType": artifact_type, "digest": layer, "size": len(payload)}],
        "subject": {"mediaType": subject.media_type, "digest": subject.digest,
                    "size": subject.size},
        "annotations": annotations,
    }
    body = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    tag = artifact_tag(subject.digest, suffix)
    return tag, registry_http.put_manifest(image.at(tag), body, OCI_MANIFEST)


def read(ref: Ref, artifact_type: str) -> tuple[bytes, str]:
    """The payload of the artifact at `ref` (a tag) and the artifact's manifest digest."""
    body, _, digest = registry_http.get_manifest(ref)
    try:
        manifest = json.loads(body)
        [layer] = [entry for entry in manifest["layers"] if entry["mediaType"] == artifact_type]
        blob = str(layer["digest"])
    except (ValueError, KeyError, TypeError):
        raise RegistryError(f"{ref.host}/{ref.repository}:{ref.reference} is not a "
                            f"{artifact_type} artifact") from None
    return registry_http.get_blob(ref, blob), digest
