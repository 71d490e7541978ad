"""The token dance against a real loopback registry stand-in that counts token requests:
one request per scope for a whole run of concurrent questions, a refused login remembered,
and credentials never sent to a plain-HTTP realm elsewhere. No Docker needed."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from build_graph.oci.digest import Digest
from build_graph.oci.refs import Answer, Presence, parse_ref
from build_graph.registry import api, transport
from build_graph.registry import auth as registry_auth

pytestmark = pytest.mark.integration
DIGEST = "sha256:" + "cd" * 32
TOKEN = "tok-3f2a"


class TokenRegistry(ThreadingHTTPServer):
    """Answers manifest HEADs to holders of TOKEN; its /token realm trades ci:right for it;
    a blob GET is redirected to `storage`."""

    realm = ""
    storage = ""
    token_requests = 0
    lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: TokenRegistry

    def log_message(self, *args: object) -> None:
        return

    def _send(self, status: int, headers: dict[str, str], body: bytes = b"") -> None:
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        if self.headers.get("Authorization") == f"Bearer {TOKEN}":
            self._send(
                200,
                {
                    "Docker-Content-Digest": DIGEST,
                    "Content-Type": "application/vnd.oci.image.manifest.v1+json",
                },
            )
        else:
            self._send(
                401, {"WWW-Authenticate": f'Bearer realm="{self.server.realm}",service="test"'}
            )

    def do_GET(self) -> None:
        if "/blobs/" in self.path:  # object storage serves blobs: a signed redirect there
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self._send(
                    401, {"WWW-Authenticate": f'Bearer realm="{self.server.realm}",service="test"'}
                )
            else:
                self._send(307, {"Location": f"{self.server.storage}{self.path}?sig=abc"})
            return
        with self.server.lock:
            self.server.token_requests += 1
        time.sleep(0.2)  # a slow login: concurrent questions arrive while it runs
        right = "Basic " + base64.b64encode(b"ci:right").decode()
        if self.headers.get("Authorization") == right:
            self._send(
                200,
                {"Content-Type": "application/json"},
                json.dumps({"token": TOKEN, "expires_in": 300}).encode(),
            )
        else:
            self._send(401, {"Content-Type": "application/json"}, b'{"errors": []}')


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[TokenRegistry]:
    httpd = TokenRegistry(("127.0.0.1", 0), Handler)
    httpd.realm = f"http://127.0.0.1:{httpd.server_address[1]}/token"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(transport, "TOKENS", registry_auth.Tokens())
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def login(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str, secret: str) -> None:
    auth = base64.b64encode(f"ci:{secret}".encode()).decode()
    (tmp_path / "config.json").write_text(json.dumps({"auths": {host: {"auth": auth}}}))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    registry_auth.credentials.cache_clear()


def ask_sixteen(host: str) -> list[Answer]:
    refs = [parse_ref(f"{host}/team/app:v{i}") for i in range(16)]
    with ThreadPoolExecutor(max_workers=16) as pool:
        return list(pool.map(api.head_manifest, refs))


def test_sixteen_concurrent_questions_cost_one_token_request(
    server: TokenRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = f"127.0.0.1:{server.server_address[1]}"
    login(tmp_path, monkeypatch, host, "right")
    probes = ask_sixteen(host)
    assert {p.presence for p in probes} == {Presence.PRESENT}
    assert {str(p.digest) for p in probes} == {DIGEST}
    assert server.token_requests == 1


def test_wrong_credentials_cost_one_failed_login_for_the_whole_run(
    server: TokenRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = f"127.0.0.1:{server.server_address[1]}"
    login(tmp_path, monkeypatch, host, "wrong")
    probes = ask_sixteen(host) + ask_sixteen(host)
    assert {p.presence for p in probes} == {Presence.ERROR}
    assert server.token_requests == 1  # remembered: not asked again in this run
    error = str(probes[0].error)
    assert f"the registry {host}'s token service refused" in error
    assert f"`docker login {host}`" in error


def test_credentials_are_never_sent_to_a_plain_http_realm_elsewhere(
    server: TokenRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = f"127.0.0.1:{server.server_address[1]}"
    login(tmp_path, monkeypatch, host, "right")
    # A registry's 401 may name any realm: here one that only looks like loopback.
    server.realm = f"http://127.0.0.1.nip.io:{server.server_address[1]}/token"
    probes = ask_sixteen(host)
    assert {p.presence for p in probes} == {Presence.ERROR}
    assert server.token_requests == 0
    assert "sent only over HTTPS" in str(probes[0].error) and host in str(probes[0].error)


@pytest.fixture(autouse=True)
def _forget_credentials() -> Iterator[None]:
    yield
    registry_auth.credentials.cache_clear()


def test_a_malformed_realm_is_an_error_in_words_not_a_crash(
    server: TokenRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The realm is the registry's text: a URL http.client cannot even open (a port that is
    not a number) must end as 'could not ask', never as an exception out of the round."""
    host = f"127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))  # anonymous: the realm is asked
    server.realm = "http://127.0.0.1:x/token"
    probes = ask_sixteen(host)
    assert {p.presence for p in probes} == {Presence.ERROR}
    assert "127.0.0.1:x" in str(probes[0].error) and "Error" not in str(probes[0].error)


BLOB = b"layer bytes from object storage"


class Storage(ThreadingHTTPServer):
    """Object storage behind a registry's redirect: serves BLOB, keeps every request's
    headers."""

    seen: list[dict[str, str]]


class StorageHandler(BaseHTTPRequestHandler):
    server: Storage

    def log_message(self, *args: object) -> None:
        return

    def do_GET(self) -> None:
        self.server.seen.append(dict(self.headers.items()))
        self.send_response(200)
        self.send_header("Content-Length", str(len(BLOB)))
        self.end_headers()
        self.wfile.write(BLOB)


def test_a_blob_redirected_to_storage_is_read_without_our_credentials(
    server: TokenRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cloud registries send blob reads to their storage with a signed URL (a 307): followed,
    and nothing of ours, the registry's token above all, goes to the other host."""
    storage = Storage(("127.0.0.1", 0), StorageHandler)
    storage.seen = []
    threading.Thread(target=storage.serve_forever, daemon=True).start()
    try:
        server.storage = f"http://127.0.0.1:{storage.server_address[1]}"
        host = f"127.0.0.1:{server.server_address[1]}"
        login(tmp_path, monkeypatch, host, "right")
        digest = Digest.of(BLOB)
        assert api.get_blob(parse_ref(f"{host}/team/app:v1"), digest) == BLOB
        assert len(storage.seen) == 1
        assert not any(k.lower() in ("authorization", "cookie") for k in storage.seen[0])
        assert TOKEN not in json.dumps(storage.seen)
    finally:
        storage.shutdown()
        storage.server_close()
