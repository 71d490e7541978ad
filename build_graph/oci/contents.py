"""What a reference names: one image, or an index of platform images and their attestations.

The one reader of what a manifest names, for every stage (its JSON read by oci/documents.py).
A tag may name a plain image manifest (Docker's classic store pushes these), an OCI index of
one platform's image plus BuildKit's provenance attestation manifest (the containerd image
store pushes every image so: the attestation entry has platform `unknown/unknown` and the
annotation `vnd.docker.reference.type: attestation-manifest`, its
`vnd.docker.reference.digest` naming the image it is about), an index of several platforms
(what promote writes for a tier built per platform), or a Docker manifest list. Judged by the
body, never by the Content-Type alone:
a registry or proxy that labels an index as an image manifest must not hide its entries.

Pure: the bytes come from registry/api.py, already hashed against their digest at the door.
Anything that is none of these raises ValueError, in words.
"""

from __future__ import annotations

from dataclasses import dataclass

from build_graph.oci import json_door
from build_graph.oci.compression import of_layer
from build_graph.oci.digest import Digest, parse_digest
from build_graph.oci.documents import (
    ATTESTATION,
    CREATED,
    DOCKER_LIST,
    DOCKER_MANIFEST,
    IMAGE_TYPES,
    INDEX_TYPES,
    OCI_INDEX,
    OCI_MANIFEST,
    REFERENCE_DIGEST,
    REFERENCE_TYPE,
    UNKNOWN_PLATFORM,
    Descriptor,
    Document,
    Index,
    parse_document,
)

__all__ = [  # the names its readers have always imported from here (oci/documents.py's)
    "ATTESTATION",
    "CREATED",
    "DOCKER_LIST",
    "DOCKER_MANIFEST",
    "IMAGE_TYPES",
    "INDEX_TYPES",
    "OCI_INDEX",
    "OCI_MANIFEST",
    "REFERENCE_DIGEST",
    "REFERENCE_TYPE",
    "UNKNOWN_PLATFORM",
    "Contents",
    "Descriptor",
    "of",
    "parse",
]


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
        value = json_door.loads(body)
    except ValueError as exc:
        raise ValueError(f"{digest} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{digest} is a JSON {type(value).__name__}, not a manifest")
    try:
        document = parse_document(value)
    except ValueError as exc:
        raise ValueError(f"{digest} is neither an image manifest nor an index ({exc})") from None
    return of(document, media_type, digest, len(body))


def of(document: Document, media_type: str, digest: Digest, size: int) -> Contents:
    """The contents of a manifest read already (oci/documents.py), served as `media_type`."""
    stated = document.media_type
    # Docker's schema 2 requires the field; only OCI documents may leave it out.
    if stated is not None and stated != media_type:
        raise ValueError(f"{digest} was served as {media_type} but says it is {stated!r}")
    if isinstance(document, Index):
        return _index(document, media_type, digest, size)
    config, layers = document.config, document.layers
    if config is None or layers is None:
        raise _neither(digest, "'config'" if config is None else "'layers'")
    sized = tuple((layer.digest, layer.size) for layer in layers if layer.size is not None)
    if len(sized) != len(layers):
        raise _neither(digest, "'size'")
    return Contents(
        digest,
        media_type,
        size,
        config=config.digest,
        layers=sized,
        compressions=frozenset(
            found for layer in layers if layer.media_type and (found := of_layer(layer.media_type))
        ),
    )


def _index(document: Index, media_type: str, digest: Digest, size: int) -> Contents:
    images, attestations = [], []
    for entry in document.manifests:
        if entry.size is None or entry.media_type is None:
            raise _neither(digest, "'size'" if entry.size is None else "'mediaType'")
        if entry.annotation(REFERENCE_TYPE) == ATTESTATION or entry.platform == UNKNOWN_PLATFORM:
            attestations.append(_attestation(digest, entry))
        else:
            images.append(entry)
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
    if entry.annotation(REFERENCE_TYPE) != ATTESTATION or entry.platform != UNKNOWN_PLATFORM:
        raise ValueError(
            f"{index}: its entry {entry.digest} (platform {entry.platform}) is "
            "neither an image of a platform nor an attestation manifest of "
            f"platform {UNKNOWN_PLATFORM}"
        )
    about = entry.annotation(REFERENCE_DIGEST)
    if entry.media_type not in IMAGE_TYPES or about is None:
        raise ValueError(
            f"{index}: its attestation {entry.digest} is no image manifest "
            f"saying which image it is about ({REFERENCE_DIGEST})"
        )
    parse_digest(about)  # a digest, or ValueError in words (Descriptor.about reads it)
    return entry


def _neither(digest: Digest, what: str) -> ValueError:
    return ValueError(f"{digest} is neither an image manifest nor an index (missing {what})")
