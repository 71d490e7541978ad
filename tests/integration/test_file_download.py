"""The one downloader of locked files (pypi/fetch.py `stream`: the .debs an apt lock
names, compile.sources' archives) against a real HTTP server on loopback that cuts a file
short, sends more than the lock's size, or wants the credentials in the URL."""

from __future__ import annotations

import base64
import hashlib
import io
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from build_graph.errors import BuildFailed, IndexAnswerRefused, IndexUnreachable, NotOnIndex
from build_graph.pypi import fetch
from build_graph.stages import sources
from tests.loopback_http import serving

BODY = bytes(range(256)) * 64  # 16 KiB
SECRET = "s3cret-token"


class Files(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/whole.tar.gz":
            self._send(BODY, len(BODY))
        elif self.path == "/cut.tar.gz":  # promises the whole file, sends half, hangs up
            self._send(BODY[: len(BODY) // 2], len(BODY))
            self.close_connection = True
        elif self.path == "/private.deb":
            wanted = "Basic " + base64.b64encode(f"ci:{SECRET}".encode()).decode()
            if self.headers.get("Authorization") == wanted:
                self._send(BODY, len(BODY))
            else:
                self.send_error(404)
        else:
            self.send_error(404)

    def _send(self, body: bytes, length: int) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serving(Files) as address:
        yield address


def test_a_whole_file_is_written_and_hashed(server: str) -> None:
    out = io.BytesIO()
    assert fetch.stream(f"http://{server}/whole.tar.gz", out) == hashlib.sha256(BODY).hexdigest()
    assert out.getvalue() == BODY


def test_a_file_cut_short_is_an_error_naming_the_bytes_never_a_hash(server: str) -> None:
    with pytest.raises(IndexUnreachable, match=r"ended after 8192 of 16384 bytes"):
        fetch.stream(f"http://{server}/cut.tar.gz", io.BytesIO())
    # a compile source: one line naming the URL and what to do
    with pytest.raises(BuildFailed) as failed:
        sources._download(f"http://{server}/cut.tar.gz", io.BytesIO())
    said = str(failed.value)
    assert said.startswith(f"cannot download http://{server}/cut.tar.gz: the connection ended")
    assert "run again" in said and "\n" not in said


def test_more_than_the_locked_size_is_refused(server: str) -> None:
    with pytest.raises(IndexAnswerRefused, match="more than 1000 bytes; refused"):
        fetch.stream(f"http://{server}/whole.tar.gz", io.BytesIO(), limit=1000)
    out = io.BytesIO()
    fetch.stream(f"http://{server}/whole.tar.gz", out, limit=len(BODY))  # exactly: taken
    assert out.getvalue() == BODY


def test_credentials_in_the_url_go_as_basic_auth_and_never_into_a_message(server: str) -> None:
    out = io.BytesIO()
    fetch.stream(f"http://ci:{SECRET}@{server}/private.deb", out)
    assert out.getvalue() == BODY
    with pytest.raises(NotOnIndex) as missing:
        fetch.stream(f"http://ci:{SECRET}@{server}/gone.deb", io.BytesIO())
    assert SECRET not in str(missing.value) and "***@" in str(missing.value)
    with pytest.raises(BuildFailed) as failed:
        sources._download(f"http://ci:{SECRET}@{server}/gone.tar.gz", io.BytesIO())
    assert SECRET not in str(failed.value) and "HTTP 404" in str(failed.value)


def test_credentials_never_cross_the_network_in_plain_http() -> None:
    """A lock's or an index's http:// URL with a user:password off this machine is refused
    before any connection (apt archives are plain http: Basic auth there is cleartext)."""
    with pytest.raises(IndexAnswerRefused, match="unencrypted") as refused:
        fetch.stream(f"http://ci:{SECRET}@deb.example.invalid/pool/x.deb", io.BytesIO())
    assert SECRET not in str(refused.value)
