"""What a reference names: one image, or an index of platform images and their attestations.

The one reader of a manifest's shape, for every stage. A tag may name a plain image manifest
(Docker's classic store pushes these), an OCI index of one platform's image plus BuildKit's
provenance attestation manifest (the containerd image store pushes every image so: the
attestation entry has platform `unknown/unknown` and the annotation
`vnd.docker.reference.type: attestation-manifest`, its `vnd.docker.reference.digest` naming
the image it is about), an index of several platforms (what promote writes for a tier built
per platform), or a Docker manifest list. Judged by the body, never by the Content-Type alone:
a registry or proxy that labels an index as an image manifest must not hide its entries.

Pure: the bytes come from registry/api.py, already hashed against their digest at the door.
Anything that is none of these raises ValueError, in words.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from build_graph.oci import json_door
from build_graph.oci.compression import of_layer
from build_graph.oci.digest import Digest, parse_digest
from build_graph.oci.platforms import stated_platform

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX_TYPES = (OCI_INDEX, DOCKER_LIST)
IMAGE_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)
# The OCI annotation (and label) for when something was made (image-spec annotations.md).
CREATED = "org.opencontainers.image.created"

# BuildKit's annotations on an attestation manifest's index entry (docs.docker.com, "Image
# attestation storage": reference.type and reference.digest).
REFERENCE_TYPE = "vnd.docker.reference.type"
REFERENCE_DIGEST = "vnd.docker.reference.digest"
ATTESTATION = "attestation-manifest"
UNKNOWN_PLATFORM = "unknown/unknown"


@dataclass(frozen=True)
class Descriptor:
    """One manifest an index refers to, as the index states it (OCI image spec, descriptor.md).
    `platform`: the 'os/architecture' its entry states; None when it states none. `about`:
    for an attestation manifest, the digest of the image of this index it is about."""

    digest: Digest
    size: int
    media_type: str
    platform: str | None = None
    annotations: tuple[tuple[str, str], ...] = ()
    about: Digest | None = None

    def entry(self) -> dict[str, Any]:
        """This descriptor as an index entry (what promote writes)."""
        document: dict[str, Any] = {
            "mediaType": self.media_type,
            "digest": str(self.digest),
            "size": self.size,
        }
        if self.platform is not None:
            os_, _, arch = self.platform.partition("/")
            document["platform"] = {"architecture": arch, "os": os_}
        if self.annotations:
            document["annotations"] = dict(self.annotations)
        return document


@dataclass(frozen=True)
class Contents:
    """What one manifest says. An image manifest: `config` and `layers`, and `images` is
    empty. An index: `images` (its platform entries, in the index's order) and
    `attestations` (the entries no runtime pulls); `config` None, `layers` empty."""

    digest: Digest
    media_type: str
    size: int  # of the manifest's bytes: what an index entry or a `subject` states
    images: tuple[Descriptor, ...] = ()
    attestations: tuple[Descriptor, ...] = ()
    config: Digest | None = None
    layers: tuple[tuple[Digest, int], ...] = ()
    compressions: frozenset[str] = frozenset()  # of its layers: 'gzip', 'zstd' (compression.py)

    @property
    def is_index(self) -> bool:
        return self.config is None

    @property
    def refers_to(self) -> tuple[Digest, ...]:
        """Every manifest an index refers to (images and attestations); () for an image."""
        return tuple(d.digest for d in (*self.images, *self.attestations))

    def single_image(self) -> Descriptor | None:
        """An index of exactly one platform's image (attestations aside): that entry; None for
        an image manifest. ValueError for an index of no image or of several."""
        if not self.is_index:
            return None
        if len(self.images) != 1:
            platforms = ", ".join(d.platform or "no platform" for d in self.images) or "none"
            raise ValueError(
                f"{self.digest} is an index of {len(self.images)} images "
                f"({platforms}), not of one platform's image"
            )
        return self.images[0]

    def attestations_of(self, digest: Digest) -> tuple[Descriptor, ...]:
        """The attestation manifests about the image `digest`."""
        return tuple(a for a in self.attestations if a.about == digest)


def parse(body: bytes, media_type: str, digest: Digest) -> Contents:
    """The contents of a manifest (its bytes as served, their digest computed at the door)."""
    try:
        document = json_door.loads(body)
    except ValueError as exc:
        raise ValueError(f"{digest} is not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ValueError(f"{digest} is a JSON {type(document).__name__}, not a manifest")
    stated = document.get("mediaType")
    # Docker's schema 2 requires the field; only OCI documents may leave it out.
    if stated is not None and stated != media_type:
        raise ValueError(f"{digest} was served as {media_type} but says it is {stated!r}")
    try:
        if "manifests" in document:
            return _index(document, media_type, digest, len(body))
        layers = tuple(
            (parse_digest(layer["digest"]), _size(layer["size"])) for layer in document["layers"]
        )
        return Contents(
            digest,
            media_type,
            len(body),
            config=parse_digest(document["config"]["digest"]),
            layers=layers,
            compressions=frozenset(
                found for layer in document["layers"] if (found := _compression(layer))
            ),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(
            f"{digest} is neither an image manifest nor an index (missing or malformed {exc})"
        ) from None


def _index(document: dict[str, Any], media_type: str, digest: Digest, size: int) -> Contents:
    entries = document["manifests"]
    if not isinstance(entries, list):
        raise TypeError("'manifests'")
    images, attestations = [], []
    for entry in entries:
        if not isinstance(entry, dict):
            raise TypeError("'manifests' entry")
        platform = entry.get("platform")
        annotations = entry.get("annotations") or {}
        if not isinstance(annotations, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in annotations.items()
        ):
            raise TypeError("'annotations'")
        descriptor = Descriptor(
            parse_digest(entry["digest"]),
            _size(entry["size"]),
            str(entry["mediaType"]),
            stated_platform(platform) if isinstance(platform, dict) else None,
            tuple(sorted(annotations.items())),
        )
        if (
            annotations.get(REFERENCE_TYPE) == ATTESTATION
            or descriptor.platform == UNKNOWN_PLATFORM
        ):
            attestations.append(_attestation(digest, descriptor))
        else:
            images.append(descriptor)
    ours = {i.digest for i in images}
    for attestation in attestations:
        if attestation.about not in ours:
            raise ValueError(
                f"{digest} holds an attestation ({attestation.digest}) about "
                f"{attestation.about}, which is no image of that index"
            )
    return Contents(digest, media_type, size, tuple(images), tuple(attestations))


def _attestation(index: Digest, entry: Descriptor) -> Descriptor:
    """An entry that says it is an attestation, or is of platform unknown/unknown, must be
    both, and an image manifest saying which image it is about: anything else (an image
    of a real platform labelled as an attestation, to ride along unverified) is refused."""
    said = dict(entry.annotations)
    if said.get(REFERENCE_TYPE) != ATTESTATION or entry.platform != UNKNOWN_PLATFORM:
        raise ValueError(
            f"{index}: its entry {entry.digest} (platform {entry.platform}) is "
            "neither an image of a platform nor an attestation manifest of "
            f"platform {UNKNOWN_PLATFORM}"
        )
    if entry.media_type not in IMAGE_TYPES or REFERENCE_DIGEST not in said:
        raise ValueError(
            f"{index}: its attestation {entry.digest} is no image manifest "
            f"saying which image it is about ({REFERENCE_DIGEST})"
        )
    return dataclasses.replace(entry, about=parse_digest(said[REFERENCE_DIGEST]))


def _compression(layer: dict[str, Any]) -> str | None:
    media_type = layer.get("mediaType")
    return of_layer(media_type) if isinstance(media_type, str) else None


def _size(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError("'size'")
    return value
