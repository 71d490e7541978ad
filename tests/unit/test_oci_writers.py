"""Every writer of OCI JSON, its bytes pinned: what each wrote before oci/documents.py (the
same inputs through the code before it gave these bytes), kept byte for byte, since tags,
referrers, signatures and indexes are content-addressed. Others' entries and layers, with
keys the model does not know and in their own key order, go back as they were written."""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path

import pytest

from build_graph.docker import oci_layout
from build_graph.oci import contents, referrers
from build_graph.oci.digest import Digest
from build_graph.oci.index import Entry, build_index
from build_graph.oci.platforms import parse_platform
from build_graph.oci.refs import Answer, Presence, Ref, parse_ref
from build_graph.registry import api, artifacts, cosign_legacy

OCI_M = "application/vnd.oci.image.manifest.v1+json"
OCI_I = "application/vnd.oci.image.index.v1+json"
DOCKER_M = "application/vnd.docker.distribution.manifest.v2+json"
DSSE = "application/vnd.dsse.envelope.v1+json"
IMAGE = parse_ref("127.0.0.1:5000/r/x:t")


def dig(n: int) -> Digest:
    return Digest(f"{n:064x}")


EXPECTED = {
    "promote": (
        b"{\n"
        b'  "manifests": [\n'
        b"    {\n"
        b'      "digest": "sha256:00000000000000000000000000000000000000000000000000000000'
        b'00000002",\n'
        b'      "mediaType": "application/vnd.oci.image.manifest.v1+json",\n'
        b'      "platform": {\n'
        b'        "architecture": "amd64",\n'
        b'        "os": "linux"\n'
        b"      },\n"
        b'      "size": 1055\n'
        b"    },\n"
        b"    {\n"
        b'      "annotations": {\n'
        b'        "vnd.docker.reference.digest": "sha256:000000000000000000000000000000000'
        b'0000000000000000000000000000002",\n'
        b'        "vnd.docker.reference.type": "attestation-manifest"\n'
        b"      },\n"
        b'      "digest": "sha256:00000000000000000000000000000000000000000000000000000000'
        b'00000003",\n'
        b'      "mediaType": "application/vnd.oci.image.manifest.v1+json",\n'
        b'      "platform": {\n'
        b'        "architecture": "unknown",\n'
        b'        "os": "unknown"\n'
        b"      },\n"
        b'      "size": 566\n'
        b"    }\n"
        b"  ],\n"
        b'  "mediaType": "application/vnd.oci.image.index.v1+json",\n'
        b'  "schemaVersion": 2\n'
        b"}\n"
    ),
    "promote_docker": (
        b"{\n"
        b'  "manifests": [\n'
        b"    {\n"
        b'      "digest": "sha256:00000000000000000000000000000000000000000000000000000000'
        b'00000004",\n'
        b'      "mediaType": "application/vnd.docker.distribution.manifest.v2+json",\n'
        b'      "platform": {\n'
        b'        "architecture": "arm64",\n'
        b'        "os": "linux"\n'
        b"      },\n"
        b'      "size": 9\n'
        b"    }\n"
        b"  ],\n"
        b'  "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",\n'
        b'  "schemaVersion": 2\n'
        b"}\n"
    ),
    "referrers": (
        b'{"manifests":[{"artifactType":"a/b","digest":"sha256:000000000000000000000000000'
        b'000000000000000000000000000000000000a","mediaType":"application/vnd.oci.image.ma'
        b'nifest.v1+json","size":8,"x-theirs":[1,{"a":1,"b":2}]},{"annotations":{"k":"v"},'
        b'"artifactType":"c/d","digest":"sha256:000000000000000000000000000000000000000000'
        b'000000000000000000000c","mediaType":"application/vnd.oci.image.manifest.v1+json"'
        b',"size":7}],"mediaType":"application/vnd.oci.image.index.v1+json","schemaVersion'
        b'":2}'
    ),
    "artifact": (
        b'{"annotations":{"dev.build-graph.artifact":"sbom","z":"y"},"artifactType":"c/d",'
        b'"config":{"digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c06'
        b'0f61caaff8a","mediaType":"application/vnd.oci.empty.v1+json","size":2},"layers":'
        b'[{"digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaf'
        b'f8a","mediaType":"c/d","size":2}],"mediaType":"application/vnd.oci.image.manifes'
        b't.v1+json","schemaVersion":2,"subject":{"digest":"sha256:00000000000000000000000'
        b'00000000000000000000000000000000000000001","mediaType":"application/vnd.oci.imag'
        b'e.manifest.v1+json","size":12}}'
    ),
    "att": (
        b'{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","con'
        b'fig":{"mediaType":"application/vnd.oci.image.config.v1+json","size":307,"digest"'
        b':"sha256:d264317b8a29a1e6c7371f65a449c19bc7f4b3e4ea7ea0855c4099e3bcaebde1"},"lay'
        b'ers":[{"digest":"sha256:00000000000000000000000000000000000000000000000000000000'
        b'00000014","annotations":{"predicateType":"p/other"},"size":3,"mediaType":"applic'
        b'ation/vnd.dsse.envelope.v1+json","x":1},{"mediaType":"application/vnd.dsse.envel'
        b'ope.v1+json","size":3,"digest":"sha256:b77349bf1fa9b26d45d545d7d64dad96737e9cfbb'
        b'3cbb5f5d10fb77b0fcc44ad","annotations":{"dev.cosignproject.cosign/signature":"",'
        b'"predicateType":"p/ours","dev.build-graph.fingerprint":"fp"}}]}'
    ),
    "load_index": (
        b'{"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.mani'
        b'fest.v1+json", "digest": "sha256:d0a6f66f7cdd652d4c80117b1a079fbda72a1b4d72b3505'
        b'4cb41de58a13c75ca", "size": 238, "annotations": {"io.containerd.image.name": "r/'
        b'x:t"}, "zz": 1}]}'
    ),
    "load_marker": (b'{"imageLayoutVersion":"1.0.0"}'),
    "keep_only": (
        b'{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "ma'
        b'nifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest":'
        b' "sha256:d0a6f66f7cdd652d4c80117b1a079fbda72a1b4d72b35054cb41de58a13c75ca", "siz'
        b'e": 238, "annotations": {"io.containerd.image.name": "r/x:t"}, "zz": 1}]}'
    ),
}


def test_promote_s_index_keeps_its_bytes() -> None:
    push = {
        "schemaVersion": 2,
        "mediaType": OCI_I,
        "manifests": [
            {
                "mediaType": OCI_M,
                "digest": str(dig(2)),
                "size": 1055,
                "platform": {"architecture": "amd64", "os": "linux"},
            },
            {  # what BuildKit's entry carries beside the fields is not written again
                "mediaType": OCI_M,
                "size": 566,
                "digest": str(dig(3)),
                "urls": ["https://x"],
                "annotations": {
                    "vnd.docker.reference.type": "attestation-manifest",
                    "vnd.docker.reference.digest": str(dig(2)),
                },
                "platform": {"os": "unknown", "architecture": "unknown", "variant": "v0"},
            },
        ],
    }
    body = json.dumps(push).encode()
    named = contents.parse(body, OCI_I, Digest.of(body))
    amd64 = Entry(parse_platform("linux/amd64"), dig(2), 1055, OCI_M)
    assert build_index([amd64], named.attestations).body == EXPECTED["promote"]
    arm64 = Entry(parse_platform("linux/arm64"), dig(4), 9, DOCKER_M)
    assert build_index([arm64]).body == EXPECTED["promote_docker"]


def test_a_referrers_index_keeps_its_bytes_and_others_entries() -> None:
    theirs = {
        "size": 8,
        "digest": str(dig(10)),
        "mediaType": OCI_M,
        "artifactType": "a/b",
        "x-theirs": [1, {"b": 2, "a": 1}],
    }
    tag = json.dumps({"schemaVersion": 2, "mediaType": OCI_I, "manifests": [theirs]}).encode()
    ours = referrers.Referrer(dig(12), 7, "c/d", {"k": "v"})
    amended = referrers.with_entries(referrers.entries(tag), [ours])
    assert amended is not None
    assert referrers.index(amended) == EXPECTED["referrers"]


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """api's calls answered here (no socket): blobs taken, the `.att` image there with
    another tool's layer and an older one of ours; what is put, kept by kind."""
    put: dict[str, bytes] = {}
    att = {
        "schemaVersion": 2,
        "mediaType": OCI_M,
        "config": {"mediaType": "x", "size": 1, "digest": str(dig(30))},
        "layers": [
            {
                "digest": str(dig(20)),
                "annotations": {"predicateType": "p/other"},
                "size": 3,
                "mediaType": DSSE,
                "x": 1,
            },
            {
                "mediaType": DSSE,
                "size": 4,
                "digest": str(dig(21)),
                "annotations": {"predicateType": "p/ours"},
            },
        ],
    }
    body = json.dumps(att).encode()

    def head(ref: Ref) -> Answer:
        if ref.reference.endswith(".att"):
            return Answer(Presence.PRESENT, digest=dig(99))
        return Answer(Presence.ABSENT)

    def put_referrer(ref: Ref, body: bytes, media_type: str) -> tuple[Digest, bool]:
        put["artifact"] = body
        return Digest.of(body), True

    def put_manifest(ref: Ref, body: bytes, media_type: str) -> Digest:
        put["att"] = body
        return Digest.of(body)

    monkeypatch.setattr(api, "put_blob", lambda ref, data: Digest.of(data))
    monkeypatch.setattr(api, "head_manifest", head)
    monkeypatch.setattr(api, "put_referrer", put_referrer)
    monkeypatch.setattr(api, "put_manifest", put_manifest)
    monkeypatch.setattr(api, "get_manifest", lambda ref: api.Manifest(body, OCI_M, Digest.of(body)))
    return put


def test_an_artifact_s_manifest_keeps_its_bytes(registry: dict[str, bytes]) -> None:
    subject = Answer(Presence.PRESENT, digest=dig(1), media_type=OCI_M, size=12)
    artifacts.publish(IMAGE, subject, "sbom", "c/d", b"{}", {"z": "y"})
    assert registry["artifact"] == EXPECTED["artifact"]


def test_cosign_s_att_image_keeps_its_bytes_and_other_layers(registry: dict[str, bytes]) -> None:
    cosign_legacy.attach(IMAGE, dig(1), b"env", "p/ours", "fp")
    assert registry["att"] == EXPECTED["att"]


def test_the_layout_s_index_json_keeps_its_bytes(tmp_path: Path) -> None:
    """The index.json `docker load` is given, and the one the layout keeps: BuildKit's entry
    as it wrote it (its key order, a key no one knows)."""
    layout = tmp_path / "oci"
    blobs = oci_layout.blobs(layout)
    blobs.mkdir(parents=True)

    def blob(data: bytes) -> Digest:
        (blobs / Digest.of(data).hex).write_bytes(data)
        return Digest.of(data)

    config, layer = {"digest": str(blob(b"{}")), "size": 2}, {"digest": str(blob(b"l")), "size": 1}
    manifest = json.dumps({"schemaVersion": 2, "config": config, "layers": [layer]}).encode()
    entry = {
        "mediaType": OCI_M,
        "digest": str(blob(manifest)),
        "size": len(manifest),
        "annotations": {"io.containerd.image.name": "r/x:t"},
        "zz": 1,
    }
    (layout / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [entry]}))
    built = oci_layout.built(layout)
    docker = tmp_path / "docker"  # `docker load` here keeps the tar it is given
    docker.write_text(f"#!/bin/sh\ncat > {tmp_path}/load.tar\n")
    docker.chmod(0o755)
    assert oci_layout._load(str(docker), dict(os.environ), layout, built, [built.digest]) is None
    with tarfile.open(tmp_path / "load.tar") as tar:
        given = [tar.extractfile(name) for name in ("index.json", "oci-layout")]
        assert [f.read() if f else None for f in given] == [
            EXPECTED["load_index"],
            EXPECTED["load_marker"],
        ]
    oci_layout.keep_only(layout, built)
    assert (layout / "index.json").read_bytes() == EXPECTED["keep_only"]
