"""The registry client (build_graph/registry/) against an OCI registry in this process
(tests/support/oci_registry.py): what it sends, what it keeps, and what it refuses, read
from the registry's own stores and request log. No Docker, no network: connections go to
that registry's loopback port only."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from build_graph.errors import DeletesRefused, RegistryError, UntrustedAnswer
from build_graph.gpu.status import GpuState, GpuStatus
from build_graph.layout import TierFolder
from build_graph.oci.contents import CREATED
from build_graph.oci.digest import Digest
from build_graph.oci.referrers import Referrer, fallback_tag
from build_graph.oci.refs import Answer, Presence, Ref, parse_ref
from build_graph.oci.verify_report import VerifyReport, Versions
from build_graph.registry import api, artifacts, referrers, tags, transport, upload
from build_graph.registry import auth as registry_auth
from build_graph.registry.availability import Availability
from build_graph.registry.reports import ReportStore
from tests.support.oci_registry import (
    OCI_INDEX,
    OCI_MANIFEST,
    OciRegistry,
    digest_of,
    running_registry,
)

REAL_CONNECT = socket.socket.connect  # taken at import, before the unit guard replaces it
REPO = "team/app"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"
SBOM = "application/vnd.cyclonedx+json"


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[OciRegistry]:
    """A fresh registry; this test may connect to its port on 127.0.0.1 and nowhere else.
    Anonymous (an empty DOCKER_CONFIG), with a token cache of its own."""
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "no-docker-config"))
    registry_auth.credentials.cache_clear()
    monkeypatch.setattr(transport, "TOKENS", registry_auth.Tokens())
    with running_registry() as served:
        allowed = ("127.0.0.1", served.port)

        def connect(sock: socket.socket, address: Any) -> None:
            if address != allowed:
                raise AssertionError(f"unit tests may only connect to {allowed}, not {address}")
            REAL_CONNECT(sock, address)

        monkeypatch.setattr(socket.socket, "connect", connect)
        yield served
    registry_auth.credentials.cache_clear()


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses the transport takes between attempts, recorded instead of slept."""
    taken: list[float] = []
    monkeypatch.setattr(transport, "time", SimpleNamespace(sleep=taken.append))
    return taken


def ref(registry: OciRegistry, reference: str = "v1", repository: str = REPO) -> Ref:
    """`repository` at the tag or digest `reference`, on `registry`."""
    sep = "@" if reference.startswith("sha256:") else ":"
    return parse_ref(f"{registry.address}/{repository}{sep}{reference}")


def image_manifest(config: bytes, layers: list[bytes], **extra: Any) -> bytes:
    """An OCI image manifest, written with spaces and an odd key order: bytes a client that
    re-serialised JSON would change (and so change the digest)."""
    document = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "layers": [
            {"mediaType": LAYER_TYPE, "digest": digest_of(b), "size": len(b)} for b in layers
        ],
        "config": {"mediaType": CONFIG_TYPE, "digest": digest_of(config), "size": len(config)},
        **extra,
    }
    return json.dumps(document, indent=3).encode()


def push_image(registry: OciRegistry, tag: str = "v1") -> tuple[bytes, Digest, bytes, bytes]:
    """An image pushed through the client: (manifest bytes, digest, config, layer)."""
    config, layer = b'{"architecture": "amd64", "os": "linux"}', b"layer bytes " * 100
    where = ref(registry, tag)
    api.put_blob(where, config)
    api.put_blob(where, layer)
    body = image_manifest(config, [layer])
    return body, api.put_manifest(where, body, OCI_MANIFEST), config, layer


def blob_file(folder: Path, data: bytes) -> tuple[Digest, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    digest = Digest.of(data)
    path = folder / digest.hex
    path.write_bytes(data)
    return digest, path


def pattern_bytes(size: int, seed: int = 0) -> bytes:
    return bytes((i * 7 + seed) % 251 for i in range(size))


# -- round trips ------------------------------------------------------------------------------


def test_a_manifest_and_its_blobs_read_back_by_tag_and_digest_byte_for_byte(
    registry: OciRegistry,
) -> None:
    body, digest, config, layer = push_image(registry)
    assert digest == Digest(digest_of(body).removeprefix("sha256:"))
    assert registry.manifest(REPO, "v1") == registry.manifest(REPO, str(digest))
    stored = registry.manifest(REPO, "v1")
    assert stored is not None and stored.body == body  # sent as it was, not re-serialised
    answer = api.head_manifest(ref(registry))
    assert (answer.presence, answer.digest, answer.size) == (Presence.PRESENT, digest, len(body))
    assert answer.media_type == OCI_MANIFEST
    for reference in ("v1", str(digest)):
        read = api.get_manifest(ref(registry, reference))
        assert (read.body, read.digest, read.media_type) == (body, digest, OCI_MANIFEST)
    found = api.read_image(ref(registry))
    assert found.ref.reference == str(digest) and not found.named.is_index
    assert found.image.config == Digest.of(config)
    assert found.image.layers == ((Digest.of(layer), len(layer)),)
    assert api.get_blob(ref(registry), Digest.of(layer)) == layer


def test_a_blob_the_repository_has_is_not_sent_again(registry: OciRegistry) -> None:
    data = b"a config blob"
    assert api.put_blob(ref(registry), data) == Digest.of(data)
    assert api.put_blob(ref(registry), data) == Digest.of(data)
    assert len(registry.seen("POST")) == 1  # one upload; the second put asked only a HEAD
    assert len(registry.seen("HEAD", rf"/v2/{REPO}/blobs/sha256:.*")) == 2
    assert registry.blob(REPO, digest_of(data)) == data


def test_an_index_of_one_image_and_its_attestation_reads_as_that_image(
    registry: OciRegistry,
) -> None:
    image_body, image, config, layer = push_image(registry)
    attestation = image_manifest(config, [layer], artifactType="application/vnd.in-toto+json")
    attestation_digest = api.put_manifest(
        ref(registry, digest_of(attestation)), attestation, OCI_MANIFEST
    )
    index = {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [
            {
                "mediaType": OCI_MANIFEST,
                "digest": str(image),
                "size": len(image_body),
                "platform": {"architecture": "amd64", "os": "linux"},
            },
            {
                "mediaType": OCI_MANIFEST,
                "digest": str(attestation_digest),
                "size": len(attestation),
                "platform": {"architecture": "unknown", "os": "unknown"},
                "annotations": {
                    "vnd.docker.reference.type": "attestation-manifest",
                    "vnd.docker.reference.digest": str(image),
                },
            },
        ],
    }
    index_digest = api.put_manifest(ref(registry, "multi"), json.dumps(index).encode(), OCI_INDEX)
    found = api.read_image(ref(registry, "multi"))
    assert found.ref.reference == str(image)  # the image itself, read by its digest
    assert found.named.digest == index_digest and found.named.is_index
    assert [a.digest for a in found.named.attestations] == [attestation_digest]
    assert found.image.config == Digest.of(config)


def test_absent_is_a_404_and_nothing_else(registry: OciRegistry, sleeps: list[float]) -> None:
    push_image(registry)
    assert api.head_manifest(ref(registry, "v2")).presence is Presence.ABSENT
    assert api.head_manifest(ref(registry, "v1", "team/nothing")).presence is Presence.ABSENT
    assert api.read_blob(ref(registry), Digest.of(b"never pushed")) is None
    with pytest.raises(RegistryError, match="HTTP 404 to reading blob"):
        api.get_blob(ref(registry), Digest.of(b"never pushed"))
    registry.fail(rf"/v2/{REPO}/manifests/v1", 500, times=3)
    failed = api.head_manifest(ref(registry))
    assert failed.presence is Presence.ERROR and failed.digest is None
    assert "HTTP 500" in str(failed.error) and registry.address in str(failed.error)


def test_deleting_a_manifest_removes_it_and_its_tags_and_a_refusal_is_named(
    registry: OciRegistry,
) -> None:
    body, digest, _, _ = push_image(registry)
    api.put_manifest(ref(registry, "stable"), body, OCI_MANIFEST)
    assert registry.tags_of(REPO) == ["stable", "v1"]
    assert api.delete_manifest(ref(registry), digest) is True
    assert registry.manifest(REPO, str(digest)) is None and registry.tags_of(REPO) == []
    assert api.head_manifest(ref(registry, "stable")).presence is Presence.ABSENT
    assert api.delete_manifest(ref(registry), digest) is False  # already gone
    _, again, _, _ = push_image(registry)
    registry.deletes = False
    with pytest.raises(DeletesRefused, match="does not allow deletes"):
        api.delete_manifest(ref(registry), again)
    assert registry.manifest(REPO, str(again)) is not None


# -- what a lying registry serves is refused --------------------------------------------------


def test_a_blob_served_as_other_bytes_is_refused(registry: OciRegistry) -> None:
    data = b"the real layer"
    digest = api.put_blob(ref(registry), data)
    registry.lie(str(digest), b"a substituted layer")
    with pytest.raises(UntrustedAnswer, match=f"other bytes for blob {digest}") as caught:
        api.get_blob(ref(registry), digest)
    assert digest_of(b"a substituted layer") in str(caught.value)
    with pytest.raises(UntrustedAnswer):
        api.read_blob(ref(registry), digest)


def test_a_manifest_served_as_other_bytes_is_refused_by_digest_and_by_tag(
    registry: OciRegistry,
) -> None:
    _, digest, config, layer = push_image(registry)
    forged = image_manifest(config, [layer, b"an extra layer"])
    registry.lie(str(digest), forged)
    with pytest.raises(UntrustedAnswer, match=r"\(the digest asked for\)"):
        api.get_manifest(ref(registry, str(digest)))
    # by tag, the registry's own Docker-Content-Digest header gives it away
    with pytest.raises(UntrustedAnswer, match=r"\(the digest it named in its header\)"):
        api.get_manifest(ref(registry))
    with pytest.raises(UntrustedAnswer):
        api.read_image(ref(registry))


def test_an_upload_that_does_not_hash_to_its_digest_is_refused_in_the_registry_s_words(
    registry: OciRegistry,
) -> None:
    where = ref(registry)
    wrong = Digest.of(b"what was meant")
    with pytest.raises(RegistryError, match="HTTP 400 to finishing an upload") as caught:
        upload.finish(where, upload.start(where), wrong, b"what was sent")
    assert "DIGEST_INVALID" in str(caught.value)
    assert registry.blob(REPO, str(wrong)) is None
    assert registry.blob(REPO, digest_of(b"what was sent")) is None


def test_a_blob_redirected_elsewhere_on_the_registry_is_followed_and_still_hashed(
    registry: OciRegistry,
) -> None:
    data = b"served from storage"
    digest = api.put_blob(ref(registry), data)
    registry.redirect_blobs = True
    assert api.get_blob(ref(registry), digest) == data
    [redirected] = registry.seen("GET", rf"/v2/{REPO}/blobs/{digest}")
    assert redirected.status == 307
    assert [r.status for r in registry.seen("GET", rf"/storage/{REPO}/{digest}")] == [200]
    registry.lie(str(digest), b"storage serves other bytes")
    with pytest.raises(UntrustedAnswer, match="other bytes for blob"):
        api.get_blob(ref(registry), digest)


# -- failures for a moment -------------------------------------------------------------------


def test_a_read_answered_503_once_is_asked_again(
    registry: OciRegistry, sleeps: list[float]
) -> None:
    body, _, _, _ = push_image(registry)
    registry.fail(rf"/v2/{REPO}/manifests/v1", 503, method="GET")
    assert api.get_manifest(ref(registry)).body == body
    assert [r.status for r in registry.seen("GET", rf"/v2/{REPO}/manifests/v1")] == [503, 200]
    assert sleeps == [0.25]


def test_a_read_failing_every_time_is_given_up_after_its_attempts(
    registry: OciRegistry, sleeps: list[float]
) -> None:
    push_image(registry)
    registry.fail(rf"/v2/{REPO}/manifests/v1", 503, times=100, method="GET")
    with pytest.raises(RegistryError, match="HTTP 503 to reading the manifest"):
        api.get_manifest(ref(registry))
    assert len(registry.seen("GET", rf"/v2/{REPO}/manifests/v1")) == transport.READ_ATTEMPTS
    assert sleeps == [0.25, 0.5]


def test_a_write_answered_500_is_not_repeated_and_is_reported(
    registry: OciRegistry, sleeps: list[float]
) -> None:
    body, _, _, _ = push_image(registry)
    registry.fail(rf"/v2/{REPO}/manifests/v2", 500, method="PUT")
    with pytest.raises(RegistryError, match="HTTP 500 to writing the manifest") as caught:
        api.put_manifest(ref(registry, "v2"), body, OCI_MANIFEST)
    assert "see " in str(caught.value) and "logs" in str(caught.value)
    assert len(registry.seen("PUT", rf"/v2/{REPO}/manifests/v2")) == 1 and sleeps == []
    assert registry.resolve(REPO, "v2") is None
    api.put_manifest(ref(registry, "v2"), body, OCI_MANIFEST)  # the registry is back
    assert registry.resolve(REPO, "v2") == registry.resolve(REPO, "v1")


# -- chunked uploads, resumed; mounts ---------------------------------------------------------


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(upload, "CHUNK", 1000)
    return 1000


def test_a_blob_goes_up_in_chunks_each_to_the_latest_location(
    registry: OciRegistry, small_chunks: int, tmp_path: Path
) -> None:
    data = pattern_bytes(3500)
    digest, path = blob_file(tmp_path / "blobs", data)
    sessions = tmp_path / "sessions"
    [moved] = upload.push_blobs(ref(registry), [(digest, path)], (), sessions)
    assert (moved.how, moved.sent, moved.size) == ("sent", 3500, 3500)
    assert registry.blob(REPO, str(digest)) == data
    patches = registry.seen("PATCH")
    assert [p.content_range for p in patches] == ["0-999", "1000-1999", "2000-2999", "3000-3499"]
    # each request went where the previous answer's Location said (its _state moves on)
    assert [p.path.partition("?")[2] for p in patches] == [
        "_state=0",
        "_state=1000",
        "_state=2000",
        "_state=3000",
    ]
    [closing] = registry.seen("PUT", rf"/v2/{REPO}/blobs/uploads/.*")
    assert closing.path.endswith(f"?_state=3500&digest=sha256%3A{digest.hex}")
    assert closing.size == 0
    assert not list(sessions.glob("*.json"))
    [again] = upload.push_blobs(ref(registry), [(digest, path)], (), sessions)
    assert (again.how, again.sent) == ("present", 0) and len(registry.seen("PATCH")) == 4


def cut_off_upload(
    registry: OciRegistry, tmp_path: Path, data: bytes
) -> tuple[Digest, Path, Path, str]:
    """An upload whose third chunk the registry failed: (digest, file, sessions, the
    registry's upload id)."""
    digest, path = blob_file(tmp_path / "blobs", data)
    sessions = tmp_path / "sessions"
    registry.fail(rf"/v2/{REPO}/blobs/uploads/[0-9a-f]+", 503, method="PATCH", skip=2)
    with pytest.raises(RegistryError, match="HTTP 503 to uploading a chunk"):
        upload.push_blobs(ref(registry), [(digest, path)], (), sessions)
    record = json.loads((sessions / f"{digest.hex}.json").read_text())
    assert record["offset"] == 2000  # where it got to, kept on disk
    [upload_id] = registry.uploads
    return digest, path, sessions, upload_id


def test_an_upload_cut_off_resumes_where_the_registry_says_it_stopped(
    registry: OciRegistry, small_chunks: int, tmp_path: Path
) -> None:
    data = pattern_bytes(3500, seed=1)
    digest, path, sessions, _ = cut_off_upload(registry, tmp_path, data)
    before = len(registry.seen("PATCH"))
    [moved] = upload.push_blobs(ref(registry), [(digest, path)], (), sessions)
    assert (moved.how, moved.sent) == ("resumed", 1500)
    assert [p.content_range for p in registry.seen("PATCH")[before:]] == [
        "2000-2999",
        "3000-3499",
    ]
    assert len(registry.seen("POST")) == 1  # one session, asked for its status, not reopened
    assert registry.blob(REPO, str(digest)) == data
    assert not (sessions / f"{digest.hex}.json").exists()


def test_a_resume_goes_by_the_registry_s_offset_not_the_local_record(
    registry: OciRegistry, small_chunks: int, tmp_path: Path
) -> None:
    """The registry kept less than the record says (its last chunk was lost): what it says
    counts, and the blob it assembles is still the file."""
    data = pattern_bytes(3500, seed=2)
    digest, path, sessions, upload_id = cut_off_upload(registry, tmp_path, data)
    del registry.uploads[upload_id].received[1000:]
    [moved] = upload.push_blobs(ref(registry), [(digest, path)], (), sessions)
    assert (moved.how, moved.sent) == ("resumed", 2500)
    assert registry.seen("PATCH")[-3].content_range == "1000-1999"
    assert registry.blob(REPO, str(digest)) == data


def test_an_upload_the_registry_forgot_starts_again_from_zero(
    registry: OciRegistry, small_chunks: int, tmp_path: Path
) -> None:
    data = pattern_bytes(3500, seed=3)
    digest, path, sessions, _ = cut_off_upload(registry, tmp_path, data)
    registry.uploads.clear()  # expired on the registry's side
    [moved] = upload.push_blobs(ref(registry), [(digest, path)], (), sessions)
    assert (moved.how, moved.sent) == ("sent", 3500)
    assert [r.status for r in registry.seen("GET", rf"/v2/{REPO}/blobs/uploads/.*")] == [404]
    assert len(registry.seen("POST")) == 2
    assert registry.blob(REPO, str(digest)) == data


def test_a_child_mounts_its_parent_s_blobs_and_uploads_only_its_own(
    registry: OciRegistry, small_chunks: int, tmp_path: Path
) -> None:
    shared = [blob_file(tmp_path / "p", pattern_bytes(n, seed=n)) for n in (2500, 1200)]
    own = blob_file(tmp_path / "c", pattern_bytes(1800, seed=9))
    parent, child = ref(registry, "t", "team/parent"), ref(registry, "t", "team/child")
    upload.push_blobs(parent, shared, (), tmp_path / "sessions")
    before = len(registry.requests)
    moved = upload.push_blobs(child, [*shared, own], ("team/parent",), tmp_path / "sessions")
    assert [m.how for m in moved] == ["mounted", "mounted", "sent"]
    assert [m.sent for m in moved] == [0, 0, 1800]
    posts = [r for r in registry.requests[before:] if r.method == "POST"]
    # a mount asked for each blob; the one the parent lacks went up in the session its
    # 202 opened, not in a second one
    assert len(posts) == 3 and all("mount=sha256" in p.path for p in posts)
    assert sorted(p.status for p in posts) == [201, 201, 202]
    patched = [r for r in registry.requests[before:] if r.method == "PATCH"]
    assert sum(p.size for p in patched) == 1800
    for digest, path in [*shared, own]:
        assert registry.blob("team/child", str(digest)) == path.read_bytes()


# -- bearer tokens ----------------------------------------------------------------------------


def test_a_bearer_token_is_asked_once_per_scope_and_then_sent_up_front(
    registry: OciRegistry,
) -> None:
    registry.token_auth = True
    body, digest, _, layer = push_image(registry)
    assert api.get_manifest(ref(registry)).body == body
    assert api.get_blob(ref(registry), Digest.of(layer)) == layer
    assert api.head_manifest(ref(registry, str(digest))).digest == digest
    # one token to read, one to write, for this repository; never a third
    assert [set(g.scopes) for g in registry.tokens] == [
        {(REPO, "pull")},
        {(REPO, "pull"), (REPO, "push")},
    ]
    assert all("service=oci-registry" in q for q in registry.token_requests)
    refused = [r for r in registry.requests if r.status == 401]
    assert len(refused) == 2  # each scope's first request; every other one carried its token
    answered = [r for r in registry.requests if r.status != 401 and r.path.startswith("/v2/")]
    assert answered and all(r.authorization.startswith("Bearer tok") for r in answered)


def test_a_refused_token_is_an_error_never_absent_and_is_asked_once(
    registry: OciRegistry,
) -> None:
    push_image(registry)
    registry.token_auth = registry.refuse_tokens = True
    answers = [api.head_manifest(ref(registry)) for _ in range(3)]
    assert {a.presence for a in answers} == {Presence.ERROR}
    assert "token service refused" in str(answers[0].error)
    assert f"docker login {registry.address}" in str(answers[0].error)
    with pytest.raises(RegistryError):
        api.read_blob(ref(registry), Digest.of(b"anything"))  # not None: it could not ask
    assert len(registry.token_requests) == 1  # remembered for the run


def test_a_token_service_down_for_a_moment_is_asked_again_not_remembered_as_a_refusal(
    registry: OciRegistry,
) -> None:
    """A 503 from the realm (or no answer) is not a refused login: the next request asks
    again, so a blip in the token service does not end an hours-long run."""
    body, _, _, _ = push_image(registry)
    registry.token_auth = True
    registry.fail("/token", 503)
    first = api.head_manifest(ref(registry))
    assert first.presence is Presence.ERROR and "HTTP 503" in str(first.error)
    assert api.get_manifest(ref(registry)).body == body  # asked again, and granted
    assert len(registry.token_requests) == 2


def test_a_token_the_registry_stopped_honouring_is_asked_for_again(
    registry: OciRegistry,
) -> None:
    registry.token_auth = True
    body, _, _, _ = push_image(registry)
    issued = len(registry.tokens)
    registry.revoke_tokens()
    assert api.get_manifest(ref(registry)).body == body
    assert len(registry.tokens) == issued + 1


def test_a_token_revoked_in_the_middle_of_a_chunked_upload_is_renewed_once(
    registry: OciRegistry, small_chunks: int, tmp_path: Path
) -> None:
    """A four-hour compile's push meets a registry that stopped honouring its token after
    the second chunk: the third chunk's 401 gets one fresh token, the upload goes on where
    it was, and the blob arrives whole."""
    registry.token_auth = True
    data = pattern_bytes(3500)
    digest, path = blob_file(tmp_path / "blobs", data)

    def revoke_after_the_second_chunk(method: str, path: str) -> None:
        if method == "PATCH" and len(registry.seen("PATCH")) == 2:
            registry.revoke_tokens()

    registry.hook = revoke_after_the_second_chunk
    [moved] = upload.push_blobs(ref(registry), [(digest, path)], (), tmp_path / "sessions")
    assert (moved.how, moved.sent) == ("sent", 3500)
    assert registry.blob(REPO, str(digest)) == data
    pushing = [q for q in registry.token_requests if "pull%2Cpush" in q]
    assert len(pushing) == 2, registry.token_requests  # the first grant, one after revocation
    assert [p.content_range for p in registry.seen("PATCH") if p.status == 202] == [
        "0-999",
        "1000-1999",
        "2000-2999",
        "3000-3499",
    ]


def test_push_rights_are_asked_before_a_compile_and_leave_nothing_behind(
    registry: OciRegistry,
) -> None:
    """may_push opens an upload session and cancels it: nothing stored, nothing left open;
    a token without push scope (a read-only robot) is refused in words naming the
    repository, before any compile rather than after it."""
    registry.token_auth = True
    upload.may_push(ref(registry, "t", "team/may"))
    held = registry.repositories.get("team/may")
    assert registry.uploads == {} and (held is None or not (held.blobs or held.manifests))
    assert [s.status for s in registry.seen("POST")][-1] == 202  # really asked, and let
    registry.pull_only_tokens = True
    with pytest.raises(RegistryError) as caught:
        upload.may_push(ref(registry, "t", "team/read-only"))
    message = str(caught.value)
    assert "HTTP 401" in message and "opening an upload to team/read-only (push rights)" in message
    assert registry.uploads == {}


@pytest.mark.parametrize("status", [404, 405])
def test_a_repository_that_takes_no_pushes_fails_before_a_compile(
    registry: OciRegistry, status: int
) -> None:
    """ECR answers 404 for a repository nobody created, a read-only mirror 405: the push
    would meet the same answer first."""
    registry.fail(r"/v2/team/nowhere/blobs/uploads/", status, method="POST")
    with pytest.raises(RegistryError, match=f"HTTP {status} .* takes no pushes"):
        upload.may_push(ref(registry, "t", "team/nowhere"))
    registry.fail(r"/v2/team/flaky/blobs/uploads/", 503, method="POST", times=10)
    upload.may_push(ref(registry, "t", "team/flaky"))  # a 5xx: a warning, the run goes on


def test_a_mount_under_token_auth_asks_for_the_source_repository_too(
    registry: OciRegistry, tmp_path: Path
) -> None:
    registry.token_auth = True
    shared = blob_file(tmp_path / "p", pattern_bytes(1500))
    parent, child = ref(registry, "t", "team/parent"), ref(registry, "t", "team/child")
    upload.push_blobs(parent, [shared], (), tmp_path / "sessions")
    [moved] = upload.push_blobs(child, [shared], ("team/parent",), tmp_path / "sessions")
    assert registry.blob("team/child", str(shared[0])) == shared[1].read_bytes()
    assert (moved.how, moved.sent) == ("mounted", 0)


# -- referrers ---------------------------------------------------------------------------------


def subject(registry: OciRegistry) -> Answer:
    push_image(registry)
    answer = api.head_manifest(ref(registry))
    assert answer.digest is not None
    return answer


def foreign_artifact(registry: OciRegistry, about: Digest, artifact_type: str) -> dict[str, Any]:
    """Another tool's artifact about `about`, stored in the repository: its index entry."""
    body = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "artifactType": artifact_type,
            "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": "", "size": 2},
            "layers": [],
            "subject": {"mediaType": OCI_MANIFEST, "digest": str(about), "size": 1},
        }
    ).encode()
    digest = registry.store_manifest(REPO, digest_of(body), body, OCI_MANIFEST)
    return {
        "mediaType": OCI_MANIFEST,
        "digest": digest,
        "size": len(body),
        "artifactType": artifact_type,
    }


def fallback_index(registry: OciRegistry, about: Digest) -> list[dict[str, Any]]:
    stored = registry.manifest(REPO, fallback_tag(about))
    assert stored is not None and stored.media_type == OCI_INDEX
    listed: list[dict[str, Any]] = json.loads(stored.body)["manifests"]
    return listed


def test_with_the_referrers_api_the_registry_lists_the_artifact_and_no_tag_is_kept(
    registry: OciRegistry,
) -> None:
    image = subject(registry)
    assert image.digest is not None
    tag, artifact = artifacts.publish(ref(registry), image, "sbom", SBOM, b'{"bom": 1}', {})
    assert tag == f"{image.digest.dashed}.sbom"
    [found] = referrers.listed(ref(registry), image.digest)
    assert (found.digest, found.artifact_type) == (artifact, SBOM)
    assert found.annotations == {artifacts.MARKER: "sbom"}
    assert fallback_tag(image.digest) not in registry.tags_of(REPO)
    assert registry.seen("PUT", rf"/v2/{REPO}/manifests/{fallback_tag(image.digest)}") == []
    assert artifacts.read(ref(registry), artifact, (SBOM,)) == b'{"bom": 1}'


def test_without_the_api_the_artifact_is_listed_in_the_referrers_tag(
    registry: OciRegistry,
) -> None:
    registry.referrers_api = False
    image = subject(registry)
    assert image.digest is not None
    other = foreign_artifact(
        registry, image.digest, "application/vnd.dev.cosign.artifact.sig.v1+json"
    )
    other_index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [other]}
    registry.store_manifest(
        REPO, fallback_tag(image.digest), json.dumps(other_index).encode(), OCI_INDEX
    )
    _, artifact = artifacts.publish(ref(registry), image, "sbom", SBOM, b'{"bom": 2}', {})
    assert [e["digest"] for e in fallback_index(registry, image.digest)] == [
        other["digest"],
        str(artifact),
    ]
    listed = referrers.listed(ref(registry), image.digest)
    assert [r.digest for r in listed] == [Digest(str(other["digest"])[7:]), artifact]
    assert listed[1].artifact_type == SBOM
    assert registry.seen("GET", rf"/v2/{REPO}/referrers/.*")[-1].status == 404


@pytest.mark.parametrize("moment", ["after our write", "after our first settling read"])
def test_a_racing_writer_s_entry_and_ours_both_stay_listed(
    registry: OciRegistry, moment: str
) -> None:
    """Another runner rewrote the referrers tag from a list it read before our write: right
    after that write, or even after a read of ours had already shown our entry listed. The
    reads that follow see our entry gone, and it is written again, theirs kept."""
    registry.referrers_api = False
    image = subject(registry)
    assert image.digest is not None
    tag = fallback_tag(image.digest)
    path = f"/v2/{REPO}/manifests/{tag}"
    theirs = foreign_artifact(registry, image.digest, "application/vnd.example.report")
    strike = "PUT" if moment == "after our write" else "GET"
    raced: list[str] = []

    def racing_writer(method: str, at: str) -> None:
        if method == strike and at == path and registry.seen("PUT", path) and not raced:
            index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [theirs]}
            raced.append(registry.store_manifest(REPO, tag, json.dumps(index).encode(), OCI_INDEX))

    registry.hook = racing_writer
    _, artifact = artifacts.publish(ref(registry), image, "sbom", SBOM, b'{"bom": 3}', {})
    assert raced
    assert {e["digest"] for e in fallback_index(registry, image.digest)} == {
        theirs["digest"],
        str(artifact),
    }
    assert len(registry.seen("PUT", path)) == 2


def test_an_entry_a_racing_writer_deleted_is_dropped_not_a_failure(registry: OciRegistry) -> None:
    """Two runners verify one digest: the other replaces its artifact and deletes the old
    one right after our read listed it. The registry refuses our index naming what is gone
    (MANIFEST_BLOB_UNKNOWN); the entry is dropped and ours is listed, no error (CI saw
    `verify:raced` fail on this under load)."""
    registry.referrers_api = False
    image = subject(registry)
    assert image.digest is not None
    tag = fallback_tag(image.digest)
    path = f"/v2/{REPO}/manifests/{tag}"
    theirs = foreign_artifact(registry, image.digest, "application/vnd.example.report")
    listing = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [theirs]}
    registry.store_manifest(REPO, tag, json.dumps(listing).encode(), OCI_INDEX)
    deleted: list[str] = []

    def superseded_after_our_read(method: str, at: str) -> None:
        if method == "GET" and at == path and not deleted:
            deleted.append(theirs["digest"])
            registry.repositories[REPO].manifests.pop(theirs["digest"])

    registry.hook = superseded_after_our_read
    _, artifact = artifacts.publish(ref(registry), image, "sbom", SBOM, b'{"bom": 4}', {})
    assert deleted
    refused = [s for s in registry.seen("PUT", path) if s.status == 400]
    assert len(refused) == 1  # the registry did refuse the stale list once
    assert [e["digest"] for e in fallback_index(registry, image.digest)] == [str(artifact)]


def test_an_artifact_made_again_replaces_the_old_one_everywhere(registry: OciRegistry) -> None:
    registry.referrers_api = False
    image = subject(registry)
    assert image.digest is not None
    tag, first = artifacts.publish(ref(registry), image, "sbom", SBOM, b'{"bom": "old"}', {})
    _, second = artifacts.publish(ref(registry), image, "sbom", SBOM, b'{"bom": "new"}', {})
    assert first != second
    assert registry.resolve(REPO, tag) == str(second)
    assert [e["digest"] for e in fallback_index(registry, image.digest)] == [str(second)]
    assert registry.manifest(REPO, str(first)) is None  # deleted, not left listed anywhere
    assert [r.digest for r in referrers.listed(ref(registry), image.digest)] == [second]


def test_an_image_index_planted_on_the_referrers_tag_is_replaced_never_merged_or_deleted(
    registry: OciRegistry,
) -> None:
    registry.referrers_api = False
    image = subject(registry)
    assert image.digest is not None
    planted = {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [
            {
                "mediaType": OCI_MANIFEST,
                "digest": str(image.digest),
                "size": image.size,
                "platform": {"architecture": "amd64", "os": "linux"},
            }
        ],
    }
    planted_digest = registry.store_manifest(
        REPO, fallback_tag(image.digest), json.dumps(planted).encode(), OCI_INDEX
    )
    assert referrers.listed(ref(registry), image.digest) == []
    _, artifact = artifacts.publish(ref(registry), image, "sbom", SBOM, b"{}", {})
    assert [e["digest"] for e in fallback_index(registry, image.digest)] == [str(artifact)]
    assert registry.manifest(REPO, planted_digest) is not None


def lagging_deletion(registry: OciRegistry, entry: dict[str, Any], when: str) -> list[str]:
    """A registry whose reads lag a deletion: on the first referrers-tag PUT (after `when`
    matched a request), `entry`'s manifest is gone for the write's validation, then found
    again by every HEAD after (restored once the refusal is answered)."""
    seen: list[str] = []
    manifests = registry.repositories[REPO].manifests

    def hook(method: str, at: str) -> None:
        if not seen and re.fullmatch(when, f"{method} {at}"):
            seen.append("armed")
            seen.append(str(entry["digest"]))
            kept.append(manifests.pop(entry["digest"]))
        elif len(seen) == 2 and method == "PUT" and "/manifests/sha256-" in at:
            seen.append("refused")
            manifests[entry["digest"]] = kept.pop()

    kept: list[Any] = []
    registry.hook = hook
    return seen


def test_a_refusal_for_an_entry_every_read_still_finds_is_a_round_read_again(
    registry: OciRegistry,
) -> None:
    """The referrers index refused for a manifest the next HEADs find (a deletion the
    registry's reads had not caught up with): the write is a lost round, read again and
    written, every entry kept; before, the publish failed (racing runners, 1 run in 8)."""
    registry.referrers_api = False
    image = subject(registry)
    assert image.digest is not None
    tag = fallback_tag(image.digest)
    theirs = foreign_artifact(registry, image.digest, "application/vnd.example.report")
    listing = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [theirs]}
    registry.store_manifest(REPO, tag, json.dumps(listing).encode(), OCI_INDEX)
    seen = lagging_deletion(registry, theirs, f"GET /v2/{REPO}/manifests/{tag}")
    _, artifact = artifacts.publish(ref(registry), image, "sbom", SBOM, b'{"bom": 5}', {})
    assert seen[-1] == "refused"
    refused = [s for s in registry.seen("PUT", f"/v2/{REPO}/manifests/{tag}") if s.status == 400]
    assert len(refused) == 1
    assert [e["digest"] for e in fallback_index(registry, image.digest)] == [
        theirs["digest"],
        str(artifact),
    ]


def test_a_superseded_artifact_whose_unlisting_is_refused_is_kept_not_deleted(
    registry: OciRegistry,
) -> None:
    """Removing the old artifact from the tag is refused (as above): it stays, listed and
    stored (a listed entry naming a deleted manifest would break every later write)."""
    registry.referrers_api = False
    image = subject(registry)
    assert image.digest is not None
    tag = fallback_tag(image.digest)
    theirs = foreign_artifact(registry, image.digest, "application/vnd.example.report")
    _, first = artifacts.publish(ref(registry), image, "sbom", SBOM, b'{"bom": "a"}', {})
    listing = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [theirs]}
    listed = json.loads(registry.manifest(REPO, tag).body)["manifests"]  # type: ignore[union-attr]
    listing["manifests"] = [theirs, *listed]
    registry.store_manifest(REPO, tag, json.dumps(listing).encode(), OCI_INDEX)
    # armed when the old artifact is read to be superseded: after the new one is listed
    seen = lagging_deletion(registry, theirs, re.escape(f"GET /v2/{REPO}/manifests/{first}"))
    _, second = artifacts.publish(ref(registry), image, "sbom", SBOM, b'{"bom": "b"}', {})
    assert seen[-1] == "refused"
    digests = [e["digest"] for e in fallback_index(registry, image.digest)]
    assert str(first) in digests and str(second) in digests
    assert registry.manifest(REPO, str(first)) is not None  # kept: its unlisting was refused


def test_the_sbom_and_report_are_listed_in_one_round_and_the_sbom_even_when_the_report_fails(
    registry: OciRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry.referrers_api = False
    image = subject(registry)
    assert image.digest is not None
    path = f"/v2/{REPO}/manifests/{fallback_tag(image.digest)}"
    store = ReportStore(f"{registry.address}/{REPO}", TierFolder(tmp_path / "a"), "app")
    unlisted: list[Referrer] = []
    store.publish_sbom(image, '{"bom": 6}', unlisted)
    assert len(unlisted) == 1 and registry.seen("PUT", path) == []  # tagged, not yet listed
    store.publish(image, report(image), Availability(), unlisted)
    assert len(registry.seen("PUT", path)) == 1  # both in one write
    types = [e["artifactType"] for e in fallback_index(registry, image.digest)]
    assert types[0] == SBOM and len(types) == 2

    again: list[Referrer] = []
    store.publish_sbom(image, '{"bom": 7}', again)

    def refused(*_: object) -> object:
        raise RegistryError("signing refused")

    monkeypatch.setattr("build_graph.registry.reports.policy.seal", refused)
    with pytest.raises(RegistryError, match="signing refused"):
        store.publish(image, report(image), Availability(), again)
    listed = {e["digest"] for e in fallback_index(registry, image.digest)}
    assert str(again[0].digest) in listed  # the SBOM stored before the failure is listed


def test_of_the_sbom_and_report_listed_together_one_another_runner_replaced_is_dropped(
    registry: OciRegistry, tmp_path: Path
) -> None:
    """Two runners verify one digest: right after our write listed our SBOM and report,
    the other replaces the SBOM (its own stored, ours deleted, the tag rewritten from a
    list read before our write). Our settling read misses both of ours: the SBOM, gone
    from the registry, is dropped; the report is written back; theirs stays; no error."""
    registry.referrers_api = False
    image = subject(registry)
    assert image.digest is not None
    tag = fallback_tag(image.digest)
    path = f"/v2/{REPO}/manifests/{tag}"
    store = ReportStore(f"{registry.address}/{REPO}", TierFolder(tmp_path / "a"), "app")
    unlisted: list[Referrer] = []
    store.publish_sbom(image, '{"bom": 8}', unlisted)
    [ours] = unlisted
    theirs = foreign_artifact(registry, image.digest, SBOM)
    replaced: list[str] = []

    def other_runner(method: str, at: str) -> None:
        if method == "PUT" and at == path and not replaced:
            replaced.append(str(ours.digest))
            registry.repositories[REPO].manifests.pop(str(ours.digest))
            index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [theirs]}
            registry.store_manifest(REPO, tag, json.dumps(index).encode(), OCI_INDEX)

    registry.hook = other_runner
    store.publish(image, report(image), Availability(), unlisted)
    assert replaced
    listed = [e["digest"] for e in fallback_index(registry, image.digest)]
    assert str(ours.digest) not in listed and theirs["digest"] in listed
    [mine] = [e for e in fallback_index(registry, image.digest) if e["digest"] != theirs["digest"]]
    assert mine["artifactType"] != SBOM  # the report, written back
    assert [s.status for s in registry.seen("PUT", path)] == [201, 201]


# -- verify reports ---------------------------------------------------------------------------


def report(image: Answer, passed: bool = True) -> VerifyReport:
    assert image.digest is not None
    return VerifyReport(
        tier="app",
        variant="default",
        image=f"{REPO}:h",
        platform=None,
        digest=image.digest,
        content_hash="h",
        passed=passed,
        summary="3 passed, 0 failed, 0 not checked" if passed else "2 passed, 1 failed",
        fingerprint="fp1",
        fingerprints=Versions(None, None, None, None, None),
        gpu=GpuStatus(GpuState.NOT_CHECKED, "no GPU here"),
        gpu_policy="optional",
        gpu_present=False,
        gpu_code_paths=(),
        checks=(),
        probe={},
    )


def test_a_report_one_runner_stored_is_found_by_another(
    registry: OciRegistry, tmp_path: Path
) -> None:
    image = subject(registry)
    assert image.digest is not None
    repository = f"{registry.address}/{REPO}"
    ReportStore(repository, TierFolder(tmp_path / "a"), "app").publish(
        image, report(image), Availability()
    )
    other = ReportStore(repository, TierFolder(tmp_path / "b"), "app")  # a fresh runner
    found = other.find(image.digest, ["fp0", "fp1"], Availability())
    assert found is not None
    assert (found.digest, found.fingerprint) == (image.digest, "fp1")
    assert found.summary == "3 passed, 0 failed, 0 not checked"
    assert found.made_at == found.record["made_by"]["at"]
    assert other.find(image.digest, ["fp0"], Availability()) is None  # another verifier's


def test_a_failed_report_does_not_count_and_a_forged_one_is_refused(
    registry: OciRegistry, tmp_path: Path
) -> None:
    image = subject(registry)
    assert image.digest is not None
    repository = f"{registry.address}/{REPO}"
    store = ReportStore(repository, TierFolder(tmp_path / "a"), "app")
    store.publish(image, report(image, passed=False), Availability())
    found, why = ReportStore(repository, TierFolder(tmp_path / "b"), "app").look(
        image.digest, ["fp1"], Availability()
    )
    assert found is None and why == ["it did not pass (2 passed, 1 failed)"]
    store.publish(image, report(image), Availability())
    tag = store.ref(image.digest, "fp1").rpartition(":")[2]
    artifact = registry.manifest(REPO, tag)
    assert artifact is not None
    [layer] = json.loads(artifact.body)["layers"]
    forged = registry.blob(REPO, layer["digest"])
    assert forged is not None and b'"passed": true' in forged
    registry.lie(layer["digest"], forged.replace(b"3 passed", b"9 passed"))
    with pytest.raises(UntrustedAnswer, match="other bytes for blob"):
        ReportStore(repository, TierFolder(tmp_path / "c"), "app").find(
            image.digest, ["fp1"], Availability()
        )


def test_a_report_tagged_for_another_verifier_or_image_does_not_count(
    registry: OciRegistry, tmp_path: Path
) -> None:
    """Whoever can write tags can point the tag of a verifier we trust (or of another
    image) at a passing report made for something else: what the report says it is about
    decides, not its tag."""
    image = subject(registry)
    assert image.digest is not None
    repository = f"{registry.address}/{REPO}"
    store = ReportStore(repository, TierFolder(tmp_path / "a"), "app")
    store.publish(image, report(image), Availability())
    made = registry.manifest(REPO, store.ref(image.digest, "fp1").rpartition(":")[2])
    assert made is not None
    registry.store_manifest(
        REPO, store.ref(image.digest, "fp2").rpartition(":")[2], made.body, made.media_type
    )
    found, why = ReportStore(repository, TierFolder(tmp_path / "b"), "app").look(
        image.digest, ["fp2"], Availability()
    )
    assert found is None
    assert why == ["it is about another digest or verifier than its tag says"]


def test_an_sbom_is_stored_beside_the_report_and_read_back(
    registry: OciRegistry, tmp_path: Path
) -> None:
    image = subject(registry)
    assert image.digest is not None
    store = ReportStore(f"{registry.address}/{REPO}", TierFolder(tmp_path / "a"), "app")
    assert store.sbom(image.digest) is None
    store.publish_sbom(image, '{"bomFormat": "CycloneDX"}')
    assert store.sbom(image.digest) == b'{"bomFormat": "CycloneDX"}'
    stored = registry.manifest(REPO, f"{image.digest.dashed}.sbom")
    assert stored is not None and CREATED in json.loads(stored.body)["annotations"]


# -- tags -------------------------------------------------------------------------------------


def test_the_tags_of_an_unknown_repository_are_none_not_an_error(registry: OciRegistry) -> None:
    assert tags.list_tags(ref(registry, "v1", "team/never")) == []
    assert tags.read_tags(ref(registry, "v1", "team/never")) == tags.Tags(())


def test_every_page_of_tags_is_read(registry: OciRegistry, monkeypatch: pytest.MonkeyPatch) -> None:
    body, _, _, _ = push_image(registry)
    for tag in ("v2", "v3", "latest", "sha256-abc.sbom"):
        api.put_manifest(ref(registry, tag), body, OCI_MANIFEST)
    monkeypatch.setattr(tags, "PAGE", 2)
    assert sorted(tags.list_tags(ref(registry))) == sorted(registry.tags_of(REPO))
    assert len(tags.list_tags(ref(registry))) == 5
    pages = [r.path for r in registry.seen("GET", rf"/v2/{REPO}/tags/list")][-3:]
    assert pages == [
        f"/v2/{REPO}/tags/list?n=2",
        f"/v2/{REPO}/tags/list?n=2&last=sha256-abc.sbom",
        f"/v2/{REPO}/tags/list?n=2&last=v2",
    ]


def test_a_tag_list_the_registry_fails_is_an_error_not_empty(
    registry: OciRegistry, sleeps: list[float]
) -> None:
    push_image(registry)
    registry.fail(rf"/v2/{REPO}/tags/list", 503, times=3)
    with pytest.raises(RegistryError, match="HTTP 503 to listing the tags"):
        tags.list_tags(ref(registry))
    assert tags.list_tags(ref(registry)) == ["v1"]
