"""The OCI documents we read and write: descriptors, image manifests and image indexes, typed,
with every media type and annotation name they use: one model for the registry, the image
layout, archives, referrers and cosign's layout (as go-containerregistry's are for its code).

Read at the door: `parse_*` takes a body's bytes (through json_door) or JSON decoded already
and gives typed values, or ValueError in words. A field present must have its type (a digest
that parses, a size a non-negative integer, annotations strings; null is absent, as in Go);
which fields must be there is the reader's question (tools leave out what the spec requires:
contents.py requires an image's config and layers, a referrers entry needs only its digest).

Written as our writers always wrote, since the bytes are content-addressed (tags, referrers,
signatures): a descriptor read keeps the JSON it was read from (`written`), so another tool's
entry goes back unchanged, unknown keys and all; one made here is written from its fields in
go-containerregistry's key order (cosign's); `encode`'s forms are each writer's JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal, assert_never

from build_graph.oci import json_door
from build_graph.oci.digest import Digest, maybe_digest, parse_digest
from build_graph.oci.platforms import stated_platform

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
INDEX_TYPES = (OCI_INDEX, DOCKER_LIST)
IMAGE_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)
MANIFEST_TYPES = (*INDEX_TYPES, *IMAGE_TYPES)  # what a HEAD or GET of a manifest accepts
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
EMPTY_TYPE = "application/vnd.oci.empty.v1+json"  # OCI 1.1: the config of an artifact
DSSE_ENVELOPE = "application/vnd.dsse.envelope.v1+json"  # a layer of cosign's `.att` image
IN_TOTO = "application/vnd.in-toto+json"  # what in-toto tools look for (cosign, oras)

# The OCI annotation (and label) for when something was made (image-spec annotations.md).
CREATED = "org.opencontainers.image.created"
# BuildKit's annotations on an attestation manifest's index entry (docs.docker.com, "Image
# attestation storage": reference.type and reference.digest), and its platform.
REFERENCE_TYPE = "vnd.docker.reference.type"
REFERENCE_DIGEST = "vnd.docker.reference.digest"
ATTESTATION = "attestation-manifest"
UNKNOWN_PLATFORM = "unknown/unknown"

JsonObject = dict[str, object]
Annotations = tuple[tuple[str, str], ...]  # in the order written
Form = Literal["sorted", "compact", "indented", "spaced"]  # each writer's JSON: encode()


class _Annotated:
    annotations: Annotations

    def annotation(self, name: str) -> str | None:
        return dict(self.annotations).get(name)


@dataclass(frozen=True)
class Descriptor(_Annotated):
    """What a document says of another (image-spec descriptor.md). `platform`: the
    'os/architecture' an index entry states (oci/platforms.py), None when it states none.
    `written`: the JSON it was read from; None for one made here."""

    digest: Digest
    media_type: str | None = None
    size: int | None = None
    platform: str | None = None
    annotations: Annotations = ()
    artifact_type: str | None = None
    written: str | None = field(default=None, compare=False, repr=False)

    @property
    def about(self) -> Digest | None:
        """For BuildKit's attestation manifest, the image it is about (REFERENCE_DIGEST)."""
        return maybe_digest(self.annotation(REFERENCE_DIGEST))

    def to_json(self) -> JsonObject:
        """As read, when it was read; else its fields in go-containerregistry's order."""
        if self.written is not None:
            return _object(json.loads(self.written), "a descriptor")
        os_, _, arch = (self.platform or "").partition("/")
        return _present(
            ("mediaType", self.media_type),
            ("size", self.size),
            ("digest", str(self.digest)),
            ("annotations", dict(self.annotations) or None),
            ("platform", {"architecture": arch, "os": os_} if self.platform else None),
            ("artifactType", self.artifact_type),
        )


class _Document(_Annotated):
    """What a manifest and an index share: their JSON around their own fields, and bytes."""

    media_type: str | None
    artifact_type: str | None
    subject: Descriptor | None

    def to_json(self) -> JsonObject:
        raise NotImplementedError

    def encode(self, form: Form) -> bytes:
        return encode(self.to_json(), form)

    def _json(self, *own: tuple[str, object]) -> JsonObject:
        return _present(
            ("schemaVersion", 2),
            ("mediaType", self.media_type),
            ("artifactType", self.artifact_type),
            *own,
            ("subject", None if self.subject is None else self.subject.to_json()),
            ("annotations", dict(self.annotations) or None),
        )


@dataclass(frozen=True)
class Manifest(_Document):
    """An image manifest (OCI's, or Docker's schema 2), or an artifact's. `config` and
    `layers` are None where the document states none (no image manifest then)."""

    config: Descriptor | None = None
    layers: tuple[Descriptor, ...] | None = None
    media_type: str | None = None
    artifact_type: str | None = None
    subject: Descriptor | None = None
    annotations: Annotations = ()

    def to_json(self) -> JsonObject:
        return self._json(
            ("config", None if self.config is None else self.config.to_json()),
            ("layers", None if self.layers is None else [d.to_json() for d in self.layers]),
        )


@dataclass(frozen=True)
class Index(_Document):
    """An image index (OCI's, or Docker's manifest list): the manifests it refers to."""

    manifests: tuple[Descriptor, ...] = ()
    media_type: str | None = None
    artifact_type: str | None = None
    subject: Descriptor | None = None
    annotations: Annotations = ()

    def to_json(self) -> JsonObject:
        return self._json(("manifests", [d.to_json() for d in self.manifests]))


Document = Manifest | Index


def encode(document: JsonObject, form: Form) -> bytes:
    """`document`'s bytes in a writer's form: "sorted" (compact, keys sorted: referrers
    indexes, our artifacts), "compact" (keys as built: cosign's `.att` image, as Go writes
    it), "indented" (keys sorted, two spaces, a final newline: promote's index), "spaced"
    (Python's default: an OCI layout's index.json)."""
    match form:
        case "sorted":
            text = json.dumps(document, sort_keys=True, separators=(",", ":"))
        case "compact":
            text = json.dumps(document, separators=(",", ":"))
        case "indented":
            text = json.dumps(document, indent=2, sort_keys=True) + "\n"
        case "spaced":
            text = json.dumps(document)
        case _:
            assert_never(form)
    return text.encode()


def is_index(value: object) -> bool:
    """Whether a document is an index by its body (a `manifests` member), whatever its
    `mediaType` or Content-Type says: a proxy that labels an index as an image manifest
    must not hide its entries."""
    return isinstance(value, dict) and "manifests" in value


def parse_document(data: bytes | object) -> Document:
    """An index or a manifest, as its body says (is_index)."""
    fields = _document(data)
    return _index(fields) if is_index(fields) else _manifest(fields)


def parse_manifest(data: bytes | object) -> Manifest:
    return _manifest(_document(data))


def parse_index(data: bytes | object) -> Index:
    return _index(_document(data))


def parse_descriptor(value: object) -> Descriptor:
    """One descriptor: its digest required, each other field typed where present."""
    fields = _object(value, "a descriptor")
    if fields.get("digest") is None:
        raise ValueError("a descriptor without a 'digest'")
    try:
        digest = parse_digest(fields["digest"])
    except ValueError as exc:
        raise ValueError(f"'digest': {exc}") from None
    size = fields.get("size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
        raise ValueError("'size' is not a size in bytes (a non-negative integer)")
    return Descriptor(
        digest,
        _string(fields, "mediaType"),
        size,
        stated_platform(fields.get("platform")),
        _annotations(fields),
        _string(fields, "artifactType"),
        json.dumps(fields),
    )


def _manifest(fields: JsonObject) -> Manifest:
    return Manifest(
        _descriptor(fields, "config"),
        _descriptors(fields, "layers"),
        _string(fields, "mediaType"),
        _string(fields, "artifactType"),
        _descriptor(fields, "subject"),
        _annotations(fields),
    )


def _index(fields: JsonObject) -> Index:
    return Index(
        _descriptors(fields, "manifests") or (),
        _string(fields, "mediaType"),
        _string(fields, "artifactType"),
        _descriptor(fields, "subject"),
        _annotations(fields),
    )


def _document(data: bytes | object) -> JsonObject:
    if isinstance(data, bytes):
        try:
            data = json_door.loads(data)
        except ValueError as exc:
            raise ValueError(f"not JSON: {exc}") from None
    return _object(data, "a document")


def _descriptor(fields: JsonObject, key: str) -> Descriptor | None:
    value = fields.get(key)
    return None if value is None else _described(value, f"'{key}'")


def _descriptors(fields: JsonObject, key: str) -> tuple[Descriptor, ...] | None:
    value = fields.get(key)
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValueError(f"'{key}' is not a list but {_kind(value)}")
    return tuple(_described(entry, f"'{key}' entry {i}") for i, entry in enumerate(value, 1))


def _described(value: object, where: str) -> Descriptor:
    try:
        return parse_descriptor(value)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _string(fields: JsonObject, key: str) -> str | None:
    value = fields.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"'{key}' is not a string but {_kind(value)}")


def _annotations(fields: JsonObject) -> Annotations:
    value = fields.get("annotations")
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError("'annotations' is not an object of strings")
    return tuple(value.items())


def _present(*fields: tuple[str, object]) -> JsonObject:
    """The fields that have a value, in this order."""
    return {key: value for key, value in fields if value is not None}


def _object(value: object, what: str) -> JsonObject:
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not an object but {_kind(value)}")
    return value


def _kind(value: object) -> str:
    """A JSON value's kind in words, never the value (it came from outside)."""
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    return kinds.get(type(value), "a number" if isinstance(value, int | float) else "null")
