"""The one reader of what a tag names (oci/contents.py), on the shapes engines push."""

from __future__ import annotations

import json

import pytest

from build_graph.oci.contents import (
    ATTESTATION,
    DOCKER_MANIFEST,
    OCI_INDEX,
    OCI_MANIFEST,
    REFERENCE_DIGEST,
    REFERENCE_TYPE,
    parse,
)
from build_graph.oci.digest import Digest
from build_graph.oci.index import Entry, build_index
from build_graph.oci.platforms import parse_platform


def dig(n: int) -> Digest:
    return Digest(f"{n:064x}")


def image(config: int = 5) -> dict[str, object]:
    return {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": str(dig(config)),
            "size": 10,
        },
        "layers": [{"mediaType": "x", "digest": str(dig(6)), "size": 20}],
    }


def containerd_push(platform_image: Digest, attestation: Digest) -> dict[str, object]:
    """What Docker 28.5's containerd image store pushed for a one-platform build (seen)."""
    return {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [
            {
                "mediaType": OCI_MANIFEST,
                "digest": str(platform_image),
                "size": 1055,
                "platform": {"architecture": "amd64", "os": "linux"},
            },
            {
                "mediaType": OCI_MANIFEST,
                "digest": str(attestation),
                "size": 566,
                "annotations": {REFERENCE_DIGEST: str(platform_image), REFERENCE_TYPE: ATTESTATION},
                "platform": {"architecture": "unknown", "os": "unknown"},
            },
        ],
    }


def read(document: object, media_type: str) -> object:
    body = json.dumps(document).encode()
    return parse(body, media_type, Digest.of(body))


def test_an_image_manifest_is_one_image_with_its_config_and_layers() -> None:
    named = parse(json.dumps(image()).encode(), OCI_MANIFEST, dig(1))
    assert not named.is_index and named.config == dig(5)
    assert named.layers == ((dig(6), 20),) and named.single_image() is None
    assert named.refers_to == ()


def test_the_containerd_stores_push_is_one_image_and_its_attestation() -> None:
    named = parse(json.dumps(containerd_push(dig(2), dig(3))).encode(), OCI_INDEX, dig(1))
    inner = named.single_image()
    assert inner is not None and inner.digest == dig(2) and inner.platform == "linux/amd64"
    assert [a.digest for a in named.attestations_of(dig(2))] == [dig(3)]
    assert named.refers_to == (dig(2), dig(3))


def test_an_index_of_two_platforms_is_not_one_image() -> None:
    document = containerd_push(dig(2), dig(3))
    entries = document["manifests"]
    assert isinstance(entries, list)
    entries[1] = {
        "mediaType": OCI_MANIFEST,
        "digest": str(dig(4)),
        "size": 9,
        "platform": {"architecture": "arm64", "os": "linux"},
    }
    named = parse(json.dumps(document).encode(), OCI_INDEX, dig(1))
    with pytest.raises(ValueError, match=r"index of 2 images \(linux/amd64, linux/arm64\)"):
        named.single_image()


def test_an_index_served_as_an_image_manifest_is_read_by_its_body() -> None:
    document = containerd_push(dig(2), dig(3))
    del document["mediaType"]
    named = parse(json.dumps(document).encode(), OCI_MANIFEST, dig(1))
    assert named.is_index and named.refers_to == (dig(2), dig(3))


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ({**image(), "mediaType": DOCKER_MANIFEST}, "served as"),
        ({"schemaVersion": 2, "manifests": ["sha256:..."]}, "neither an image manifest nor"),
        (
            {"schemaVersion": 2, "manifests": [{"digest": "md5:x", "size": 1, "mediaType": "x"}]},
            "sha256",
        ),
        (
            {
                "schemaVersion": 2,
                "manifests": [{"digest": str(dig(2)), "size": -1, "mediaType": "x"}],
            },
            "'size'",
        ),
        ({"schemaVersion": 2, "layers": []}, "neither an image manifest nor"),
        ([1, 2], "not a manifest"),
    ],
)
def test_anything_else_is_refused_in_words(document: object, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse(json.dumps(document).encode(), OCI_MANIFEST, dig(1))


def test_a_promoted_index_keeps_the_attestations_about_its_entries() -> None:
    named = parse(json.dumps(containerd_push(dig(2), dig(3))).encode(), OCI_INDEX, dig(1))
    entry = Entry(parse_platform("linux/amd64"), dig(2), 1055, OCI_MANIFEST)
    index = build_index([entry], named.attestations)
    again = parse(index.body, index.media_type, index.digest)
    assert index.media_type == OCI_INDEX
    assert [i.digest for i in again.images] == [dig(2)]
    assert [(a.digest, a.about, a.platform) for a in again.attestations] == [
        (dig(3), dig(2), "unknown/unknown")
    ]


def test_an_attestation_about_no_entry_is_refused() -> None:
    named = parse(json.dumps(containerd_push(dig(2), dig(3))).encode(), OCI_INDEX, dig(1))
    entry = Entry(parse_platform("linux/amd64"), dig(9), 1055, OCI_MANIFEST)
    with pytest.raises(ValueError, match="which is no entry of this index"):
        build_index([entry], named.attestations)


def smuggled(entry: dict[str, object]) -> bytes:
    """The containerd store's push with one more entry."""
    document = containerd_push(dig(2), dig(3))
    entries = document["manifests"]
    assert isinstance(entries, list)
    return json.dumps({**document, "manifests": [*entries, entry]}).encode()


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        # an arm64 image labelled as an attestation, to ride along unverified into `latest`
        (
            {
                "mediaType": OCI_MANIFEST,
                "digest": str(dig(4)),
                "size": 9,
                "annotations": {REFERENCE_DIGEST: str(dig(2)), REFERENCE_TYPE: ATTESTATION},
                "platform": {"architecture": "arm64", "os": "linux"},
            },
            "neither an image of a platform",
        ),
        # unknown/unknown without saying it is an attestation
        (
            {
                "mediaType": OCI_MANIFEST,
                "digest": str(dig(4)),
                "size": 9,
                "platform": {"architecture": "unknown", "os": "unknown"},
            },
            "neither an image of a platform",
        ),
        # an attestation about an image the index does not hold
        (
            {
                "mediaType": OCI_MANIFEST,
                "digest": str(dig(4)),
                "size": 9,
                "annotations": {REFERENCE_DIGEST: str(dig(9)), REFERENCE_TYPE: ATTESTATION},
                "platform": {"architecture": "unknown", "os": "unknown"},
            },
            "which is no image of that",
        ),
        # an attestation that names no digest, or not a sha256 one
        (
            {
                "mediaType": OCI_MANIFEST,
                "digest": str(dig(4)),
                "size": 9,
                "annotations": {REFERENCE_TYPE: ATTESTATION},
                "platform": {"architecture": "unknown", "os": "unknown"},
            },
            "saying which image",
        ),
        (
            {
                "mediaType": OCI_MANIFEST,
                "digest": str(dig(4)),
                "size": 9,
                "annotations": {REFERENCE_DIGEST: "md5:abc", REFERENCE_TYPE: ATTESTATION},
                "platform": {"architecture": "unknown", "os": "unknown"},
            },
            "sha256",
        ),
        # an index posing as an attestation
        (
            {
                "mediaType": OCI_INDEX,
                "digest": str(dig(4)),
                "size": 9,
                "annotations": {REFERENCE_DIGEST: str(dig(2)), REFERENCE_TYPE: ATTESTATION},
                "platform": {"architecture": "unknown", "os": "unknown"},
            },
            "no image manifest",
        ),
    ],
)
def test_nothing_rides_along_as_an_attestation(entry: dict[str, object], says: str) -> None:
    body = smuggled(entry)
    with pytest.raises(ValueError, match=says):
        parse(body, OCI_INDEX, Digest.of(body))
