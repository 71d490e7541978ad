"""The one model of OCI documents (oci/documents.py): read at the door, in words when it is
not one; written back as read, or from its fields in one order; each writer's JSON form."""

from __future__ import annotations

import json

import pytest

from build_graph.oci.digest import Digest
from build_graph.oci.documents import (
    OCI_INDEX,
    OCI_MANIFEST,
    REFERENCE_DIGEST,
    Descriptor,
    Index,
    Manifest,
    encode,
    is_index,
    parse_descriptor,
    parse_document,
    parse_index,
    parse_manifest,
)

D1, D2 = Digest.of(b"one"), Digest.of(b"two")
IMAGE = {
    "schemaVersion": 2,
    "mediaType": OCI_MANIFEST,
    "config": {
        "mediaType": "application/vnd.oci.image.config.v1+json",
        "digest": str(D1),
        "size": 2,
    },
    "layers": [
        {"mediaType": "application/vnd.oci.image.layer.v1.tar+zstd", "digest": str(D2), "size": 3}
    ],
    "annotations": {"org.opencontainers.image.created": "2026-01-01T00:00:00Z"},
}


def test_a_manifest_reads_the_same_from_bytes_or_decoded_json() -> None:
    manifest = parse_manifest(json.dumps(IMAGE).encode())
    assert manifest == parse_manifest(IMAGE)
    assert manifest.config == Descriptor(D1, "application/vnd.oci.image.config.v1+json", 2)
    assert manifest.layers is not None and [d.digest for d in manifest.layers] == [D2]
    assert manifest.annotation("org.opencontainers.image.created") == "2026-01-01T00:00:00Z"
    assert manifest.subject is None and manifest.artifact_type is None


def test_what_a_document_is_its_body_says() -> None:
    index = {"schemaVersion": 2, "manifests": [{"digest": str(D1)}]}
    assert is_index(index) and not is_index(IMAGE) and not is_index([index])
    assert isinstance(parse_document(index), Index)
    # labelled as an image manifest, it is still an index: its entries are not hidden
    assert isinstance(parse_document({**index, "mediaType": OCI_MANIFEST}), Index)
    assert isinstance(parse_document(IMAGE), Manifest)


def test_fields_a_document_leaves_out_are_absent_and_null_is_absent() -> None:
    """Tools leave out what the spec requires; the reader that needs a field asks for it."""
    manifest = parse_manifest({"subject": {"digest": str(D1)}, "layers": [], "config": None})
    assert manifest.config is None and manifest.layers == () and manifest.media_type is None
    assert manifest.subject == Descriptor(D1)
    assert parse_manifest({}).layers is None
    entry = parse_descriptor({"digest": str(D1), "size": None, "annotations": None})
    assert (entry.size, entry.media_type, entry.annotations, entry.platform) == (
        None,
        None,
        (),
        None,
    )
    assert parse_index({"mediaType": OCI_INDEX}).manifests == ()


@pytest.mark.parametrize(
    ("document", "says"),
    [
        (b"{", "not JSON"),
        (b"[" * 100_000, "not JSON"),  # too deep: in words, never a RecursionError
        ([1], "a document is not an object but a list"),
        ({"manifests": {}}, "'manifests' is not a list but an object"),
        ({"manifests": [1]}, "'manifests' entry 1: a descriptor is not an object but a number"),
        ({"manifests": [{"size": 1}]}, "'manifests' entry 1: a descriptor without a 'digest'"),
        ({"layers": [{"digest": "sha256:../../x"}]}, "'layers' entry 1: 'digest': "),
        ({"config": {"digest": "md5:abc"}}, "'config': 'digest': 'md5:abc' is a md5 digest"),
        ({"config": {"digest": str(D1), "size": -1}}, "'config': 'size' is not a size in bytes"),
        ({"config": {"digest": str(D1), "size": True}}, "'config': 'size' is not a size"),
        ({"config": {"digest": str(D1), "size": 1.5}}, "'config': 'size' is not a size"),
        ({"mediaType": 2}, "'mediaType' is not a string but a number"),
        ({"artifactType": ["x"]}, "'artifactType' is not a string but a list"),
        ({"annotations": {"a": 1}}, "'annotations' is not an object of strings"),
        ({"annotations": ["a"]}, "'annotations' is not an object of strings"),
        ({"subject": "sha256:..."}, "'subject': a descriptor is not an object but a string"),
    ],
)
def test_anything_else_is_refused_in_words(document: object, says: str) -> None:
    with pytest.raises(ValueError, match="^" + says.replace("(", r"\(")):
        parse_document(document)


def test_a_descriptor_read_is_written_back_as_it_was_read() -> None:
    """Another tool's entry: its key order, keys the model does not know, a platform's
    variant; the typed fields are read from it, and it is equal to one made from them."""
    theirs = {
        "size": 5,
        "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"},
        "digest": str(D1),
        "mediaType": OCI_MANIFEST,
        "data": "e30=",
        "annotations": {"z": "1", "a": "ü"},
    }
    entry = parse_descriptor(theirs)
    assert entry.to_json() == theirs and list(entry.to_json()) == list(theirs)
    made = Descriptor(D1, OCI_MANIFEST, 5, "linux/arm64", (("z", "1"), ("a", "ü")))
    assert entry == made and made.to_json() != theirs


def test_a_descriptor_made_here_is_written_in_go_s_key_order() -> None:
    made = Descriptor(D1, "m/t", 3, "linux/amd64", (("b", "1"), ("a", "2")), "a/t")
    assert json.dumps(made.to_json()) == (
        '{"mediaType": "m/t", "size": 3, "digest": "' + str(D1) + '", "annotations": '
        '{"b": "1", "a": "2"}, "platform": {"architecture": "amd64", "os": "linux"}, '
        '"artifactType": "a/t"}'
    )
    assert Descriptor(D1).to_json() == {"digest": str(D1)}  # only what it has


def test_documents_are_written_with_only_what_they_have() -> None:
    layer = Descriptor(D2, "l/t", 1)
    manifest = Manifest(Descriptor(D1, "c/t", 2), (layer,), OCI_MANIFEST)
    assert list(manifest.to_json()) == ["schemaVersion", "mediaType", "config", "layers"]
    artifact = Manifest(Descriptor(D1), (), OCI_MANIFEST, "a/t", layer, (("k", "v"),))
    assert list(artifact.to_json()) == [
        "schemaVersion",
        "mediaType",
        "artifactType",
        "config",
        "layers",
        "subject",
        "annotations",
    ]
    assert Index((layer,)).to_json() == {"schemaVersion": 2, "manifests": [layer.to_json()]}
    assert list(Index((), OCI_INDEX).to_json()) == ["schemaVersion", "mediaType", "manifests"]


def test_a_document_read_and_written_again_reads_the_same() -> None:
    manifest = parse_manifest(IMAGE)
    for form in ("sorted", "compact", "indented", "spaced"):
        assert parse_manifest(manifest.encode(form)) == manifest
    assert json.loads(manifest.encode("spaced")) == IMAGE


def test_each_writer_s_form() -> None:
    document = {"b": 1, "a": [1, {"d": "ü", "c": None}]}
    assert encode(document, "sorted") == b'{"a":[1,{"c":null,"d":"\\u00fc"}],"b":1}'
    assert encode(document, "compact") == b'{"b":1,"a":[1,{"d":"\\u00fc","c":null}]}'
    assert encode(document, "spaced") == b'{"b": 1, "a": [1, {"d": "\\u00fc", "c": null}]}'
    assert encode({"b": 1, "a": 2}, "indented") == b'{\n  "a": 2,\n  "b": 1\n}\n'


def test_an_attestation_entry_says_which_image_it_is_about() -> None:
    attestation = parse_descriptor({"digest": str(D1), "annotations": {REFERENCE_DIGEST: str(D2)}})
    assert attestation.about == D2
    assert Descriptor(D1).about is None
    assert Descriptor(D1, annotations=((REFERENCE_DIGEST, "md5:x"),)).about is None
