"""The referrers index of a subject, pure (oci/referrers.py): what is read from a registry
is checked, others' entries are kept, ours added once and removed."""

from __future__ import annotations

import json

import pytest

from build_graph.oci.digest import Digest
from build_graph.oci.json_door import loads
from build_graph.oci.referrers import (
    Referrer,
    artifact_about,
    entries,
    fallback_tag,
    index,
    is_referrers_index,
    with_entry,
    without,
)
from build_graph.oci.retention import artifact_subject, tag_kind

SUBJECT = Digest.of(b"image")
OURS = Referrer(Digest.of(b"report"), 512, "application/vnd.in-toto+json", {"k": "v"})
COSIGNS = {
    "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "digest": str(Digest.of(b"cosign's")),
    "size": 882,
    "artifactType": "application/vnd.oci.empty.v1+json",
}


def test_the_tag_is_the_subject_s_digest_with_a_dash() -> None:
    assert fallback_tag(SUBJECT) == f"sha256-{SUBJECT.hex}"
    # prune reads it as an artifact tag about the subject, never a human tag
    assert tag_kind(fallback_tag(SUBJECT)) == "artifact"
    assert artifact_subject(fallback_tag(SUBJECT)) == SUBJECT
    assert tag_kind(f"sha256-{SUBJECT.hex}x") == "human"


def test_an_entry_is_added_once_and_others_are_kept() -> None:
    listed = entries(index([COSIGNS]))
    added = with_entry(listed, OURS)
    assert added is not None and added[0] == COSIGNS
    assert added[1] == {
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": str(OURS.digest),
        "size": 512,
        "artifactType": "application/vnd.in-toto+json",
        "annotations": {"k": "v"},
    }
    assert with_entry(added, OURS) is None
    assert without(added, {OURS.digest}) == [COSIGNS]
    assert json.loads(index(added))["mediaType"] == "application/vnd.oci.image.index.v1+json"


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"{", "not JSON"),
        (b'{"mediaType": "application/vnd.oci.image.manifest.v1+json"}', "not an OCI image index"),
        (b'{"manifests": {}}', "not a list"),
        (b'{"manifests": [1]}', "not an object"),
        (b'{"manifests": [{"digest": "sha256:../../x"}]}', "sha256"),
    ],
)
def test_an_unreadable_index_is_refused(body: bytes, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        entries(body)


PLATFORM_ENTRY = {
    "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "digest": str(Digest.of(b"amd64 image")),
    "size": 500,
    "platform": {"os": "linux", "architecture": "amd64"},
}


def manifest(**fields: object) -> bytes:
    return json.dumps({"schemaVersion": 2, **fields}).encode()


def test_only_what_is_about_the_image_may_go_with_it() -> None:
    tag = fallback_tag(SUBJECT)
    about = manifest(subject={"digest": str(SUBJECT)}, layers=[])
    assert artifact_about(about, SUBJECT, "anything")
    elsewhere = manifest(subject={"digest": str(Digest.of(b"another"))}, layers=[])
    assert not artifact_about(elsewhere, SUBJECT, f"{tag}.sbom")
    # its referrers list, under its referrers tag; never an image's own index planted there
    assert artifact_about(index([COSIGNS]), SUBJECT, tag)
    assert not artifact_about(index([PLATFORM_ENTRY]), SUBJECT, tag)
    assert not artifact_about(index([COSIGNS]), SUBJECT, f"{tag}.sbom")
    # cosign's .att image: layers that are all signed envelopes; an image planted there is not
    envelopes = manifest(layers=[{"mediaType": "application/vnd.dsse.envelope.v1+json"}])
    assert artifact_about(envelopes, SUBJECT, f"{tag}.att")
    image = manifest(layers=[{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip"}])
    assert not artifact_about(image, SUBJECT, f"{tag}.att")
    assert not artifact_about(b"[" * 100_000, SUBJECT, tag)


def test_a_list_is_a_referrers_list_only_when_every_entry_is_an_artifact() -> None:
    assert is_referrers_index([COSIGNS, OURS.entry()])
    assert not is_referrers_index([COSIGNS, PLATFORM_ENTRY])
    assert not is_referrers_index([{"digest": str(SUBJECT), "size": 1}])


def test_json_nested_too_deep_is_not_json_never_a_crash() -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    with pytest.raises(ValueError, match="too deeply"):
        loads(deep)
    with pytest.raises(ValueError):
        entries(deep)
