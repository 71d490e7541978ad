"""The referrers index of a subject, pure (oci/referrers.py): what is read from a registry
is checked, others' entries are kept, ours added once and removed."""

from __future__ import annotations

import json

import pytest

from build_graph.oci.digest import Digest
from build_graph.oci.referrers import Referrer, entries, fallback_tag, index, with_entry, without
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
