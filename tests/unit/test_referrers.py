"""The referrers index of a subject, pure (oci/referrers.py): what is read from a registry
is checked, others' entries are kept, ours added once and removed."""

from __future__ import annotations

import base64
import json

import pytest

from build_graph.oci.digest import Digest
from build_graph.oci.documents import parse_descriptor
from build_graph.oci.json_door import loads
from build_graph.oci.referrers import (
    Referrer,
    entries,
    envelope_layers,
    envelope_subject,
    fallback_tag,
    index,
    is_referrers_index,
    subject_of,
    with_entries,
    without,
)
from build_graph.oci.retention import artifact_subject, tag_kind

SUBJECT = Digest.of(b"image")
OURS = Referrer(Digest.of(b"report"), 512, "application/vnd.in-toto+json", {"k": "v"})
COSIGNS = parse_descriptor(
    {
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": str(Digest.of(b"cosign's")),
        "size": 882,
        "artifactType": "application/vnd.oci.empty.v1+json",
    }
)


def test_the_tag_is_the_subject_s_digest_with_a_dash() -> None:
    assert fallback_tag(SUBJECT) == f"sha256-{SUBJECT.hex}"
    # prune reads it as an artifact tag about the subject, never a human tag
    assert tag_kind(fallback_tag(SUBJECT)) == "artifact"
    assert artifact_subject(fallback_tag(SUBJECT)) == SUBJECT
    assert tag_kind(f"sha256-{SUBJECT.hex}x") == "human"


def test_an_entry_is_added_once_and_others_are_kept() -> None:
    listed = entries(index([COSIGNS]))
    added = with_entries(listed, [OURS])
    assert added is not None and added[0] == COSIGNS
    assert added[1].to_json() == {
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": str(OURS.digest),
        "size": 512,
        "artifactType": "application/vnd.in-toto+json",
        "annotations": {"k": "v"},
    }
    assert with_entries(added, [OURS]) is None
    assert without(added, {OURS.digest}) == [COSIGNS]
    assert json.loads(index(added))["mediaType"] == "application/vnd.oci.image.index.v1+json"


def test_several_entries_are_added_in_one_list_each_once() -> None:
    sbom = Referrer(Digest.of(b"sbom"), 64, "application/vnd.cyclonedx+json", {})
    listed = entries(index([COSIGNS, OURS.entry()]))
    added = with_entries(listed, [sbom, OURS, sbom])
    assert added is not None
    assert [entry.digest for entry in added] == [COSIGNS.digest, OURS.digest, sbom.digest]
    assert with_entries(added, [OURS, sbom]) is None
    assert with_entries(added, []) is None


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


PLATFORM_ENTRY = parse_descriptor(
    {
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": str(Digest.of(b"amd64 image")),
        "size": 500,
        "platform": {"os": "linux", "architecture": "amd64"},
    }
)


def manifest(**fields: object) -> bytes:
    return json.dumps({"schemaVersion": 2, **fields}).encode()


def envelope(subjects: list[Digest]) -> bytes:
    statement = {"subject": [{"name": "r", "digest": {"sha256": d.hex}} for d in subjects]}
    payload = base64.b64encode(json.dumps(statement).encode()).decode()
    return json.dumps({"payloadType": "application/vnd.in-toto+json", "payload": payload}).encode()


def test_what_ties_an_artifact_to_its_image() -> None:
    about = manifest(subject={"digest": str(SUBJECT)}, layers=[])
    assert subject_of(about) == SUBJECT
    assert subject_of(manifest(layers=[])) is None  # an image: about nothing
    assert subject_of(b"[" * 100_000) is None
    # cosign's .att image: every layer an envelope, each statement naming one subject
    layers = [{"mediaType": "application/vnd.dsse.envelope.v1+json", "digest": str(SUBJECT)}]
    assert envelope_layers(manifest(layers=layers)) == [SUBJECT]
    image = [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": str(SUBJECT)}]
    assert envelope_layers(manifest(layers=image)) is None
    assert envelope_layers(manifest(layers=[])) is None
    assert envelope_subject(envelope([SUBJECT])) == SUBJECT
    assert envelope_subject(envelope([SUBJECT, Digest.of(b"x")])) is None
    assert envelope_subject(b'{"payload": "%%%"}') is None


def test_a_list_is_a_referrers_list_only_when_every_entry_is_an_artifact() -> None:
    assert is_referrers_index([COSIGNS, OURS.entry()])
    assert not is_referrers_index([COSIGNS, PLATFORM_ENTRY])
    assert not is_referrers_index([parse_descriptor({"digest": str(SUBJECT), "size": 1})])


def test_json_nested_too_deep_is_not_json_never_a_crash() -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    with pytest.raises(ValueError, match="too deeply"):
        loads(deep)
    with pytest.raises(ValueError):
        entries(deep)
    with pytest.raises(ValueError, match="more than 64 levels"):
        loads(b"[" * 65 + b"]" * 65)
    assert loads(b"[" * 64 + b"]" * 64)
