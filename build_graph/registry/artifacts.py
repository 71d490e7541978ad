"""Small OCI artifacts about an image (verify reports, in-toto Statements), bound to its digest.

Each artifact is an OCI image manifest whose `subject` is the image, published as an OCI 1.1
referrer: a registry with the referrers API lists it by itself (it answers `OCI-Subject`),
and for one without, the artifact is added to the image's referrers tag
(registry/referrers.py), so `oras discover` and cosign find it on either. We find it again
by a tag built from the image's digest (cosign's scheme, `sha256-<hex>.<suffix>`), which
every registry serves; so our own lookups never depend on referrers.

Reading one is checked at every step: its manifest is read by the digest the registry named
for the tag and hashed (registry/api.py), the layer's digest is parsed from the manifest, and
the payload is hashed against it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

from build_graph.errors import BuildGraphError, NotAnArtifact, RegistryError
from build_graph.oci.digest import Digest
from build_graph.oci.documents import (
    EMPTY_TYPE,
    OCI_MANIFEST,
    Descriptor,
    Manifest,
    parse_manifest,
)
from build_graph.oci.referrers import Referrer, subject_of
from build_graph.oci.refs import Answer, Ref, artifact_tag
from build_graph.registry import api, referrers

# The OCI 1.1 empty descriptor's blob: the config of an artifact that has none (EMPTY_TYPE).
EMPTY = b"{}"
# Which artifact of ours a manifest is (its tag's suffix: 'sbom', 'verify-<fingerprint>'):
# only ours, for the same image and tag, is ever replaced and deleted.
MARKER = "dev.build-graph.artifact"
# An artifact read whole: a report is kilobytes, an SBOM of a CUDA image a few megabytes.
ARTIFACT_LIMIT = 16 << 20


def publish(
    image: Ref,
    subject: Answer,
    suffix: str,
    artifact_type: str,
    payload: bytes,
    annotations: dict[str, str],
    unlisted: list[Referrer] | None = None,
) -> tuple[str, Digest]:
    """Push `payload` as an artifact about `subject` (the image's manifest); returns (its
    tag, its manifest digest). Where the registry does not list it by itself, it is added
    to the subject's referrers tag; with `unlisted`, appended there instead, for the caller
    to add with others in one round (`list_in_tag`)."""
    if subject.digest is None or subject.media_type is None or subject.size is None:
        raise RegistryError(
            f"{image.repository}: the registry did not describe the image's "
            "manifest (digest, media type, size) that the artifact refers to"
        )
    config = api.put_blob(image, EMPTY)
    layer = Descriptor(api.put_blob(image, payload), artifact_type, len(payload))
    said = {**annotations, MARKER: suffix}
    subject_is = Descriptor(subject.digest, subject.media_type, subject.size)
    body = artifact_manifest(subject_is, artifact_type, layer, config, said)
    tag = artifact_tag(subject.digest, suffix)
    previous = api.head_manifest(image.at(tag)).digest
    digest, listed_by_registry = api.put_referrer(image.at(tag), body, OCI_MANIFEST)
    if not listed_by_registry:
        entry = Referrer(digest, len(body), artifact_type, said)
        if unlisted is None:
            referrers.attach(image, subject.digest, entry)
        else:
            unlisted.append(entry)
    if previous is not None and previous != digest:
        _supersede(image, subject.digest, previous, suffix, listed_by_registry)
    return tag, digest


def list_in_tag(image: Ref, subject: Answer, unlisted: list[Referrer]) -> None:
    """Add what `publish` left `unlisted` to the subject's referrers tag, in one round."""
    if unlisted and subject.digest is not None:
        referrers.attach(image, subject.digest, *unlisted)


def artifact_manifest(
    subject: Descriptor,
    artifact_type: str,
    layer: Descriptor,
    config: Digest,
    annotations: Mapping[str, str],
) -> bytes:
    """The manifest of an artifact about `subject` holding `layer` (its config the empty
    blob, `config`): keys sorted, no spaces."""
    return Manifest(
        Descriptor(config, EMPTY_TYPE, len(EMPTY)),
        (layer,),
        OCI_MANIFEST,
        artifact_type,
        subject,
        tuple(annotations.items()),
    ).encode("sorted")


def _supersede(
    image: Ref, subject: Digest, previous: Digest, suffix: str, listed_by_registry: bool
) -> None:
    """The artifact our tag named before (a report made again, an SBOM of a later verify):
    out of the referrers tag, and deleted, so no tool lists it (with the referrers API the
    registry lists every manifest about the subject until it is deleted). Only one of ours
    for the same image and tag (its `subject` and MARKER say so) goes: a tag pointed at
    anything else (an image, another tool's artifact, our SBOM) deletes nothing. Best
    effort: a registry that refuses deletes keeps it, untagged."""
    with contextlib.suppress(BuildGraphError):
        body = api.get_manifest(image.at(str(previous))).body
        if subject_of(body) != subject or marker_of(body) != suffix:
            return
        if not listed_by_registry:
            referrers.detach(image, subject, {previous})
        api.delete_manifest(image, previous)


def marker_of(body: bytes) -> str | None:
    """Which of our artifacts a manifest says it is (MARKER), None when it says nothing."""
    try:
        return parse_manifest(body).annotation(MARKER)
    except ValueError:
        return None


def read(image: Ref, manifest_digest: Digest, artifact_types: tuple[str, ...]) -> bytes:
    """The payload of the artifact whose manifest is `manifest_digest` in `image`'s
    repository: its one layer of one of `artifact_types`. Raises UntrustedAnswer when it is
    not such an artifact or a hash differs, RegistryError when the registry cannot answer."""
    where = f"{image.host}/{image.repository}@{manifest_digest}"
    manifest = api.get_manifest(image.at(str(manifest_digest)))
    try:
        layers = parse_manifest(manifest.body).layers or ()
        [layer] = [entry for entry in layers if entry.media_type in artifact_types]
    except ValueError:
        raise NotAnArtifact(
            f"{where} is not an artifact of type {' or '.join(artifact_types)}"
        ) from None
    return api.get_blob(image, layer.digest, ARTIFACT_LIMIT)
