"""Archive sources (`URL#sha256=...`): downloaded once, checked against the pin, and never
left half-written, against a real HTTP server on loopback."""

from __future__ import annotations

import fcntl
import hashlib
import http.server
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import ClassVar

import pytest

from build_graph.errors import BuildFailed
from build_graph.stages.sources import DOWNLOADING, cached_archive

pytestmark = pytest.mark.integration
BODY = b"pretend this is an sdist " * 4096


class Served(http.server.BaseHTTPRequestHandler):
    requests: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        Served.requests.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        if self.path.startswith("/cut/"):  # the connection drops halfway through the body
            self.wfile.write(BODY[: len(BODY) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(BODY)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Served)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def leftovers(cache: Path) -> list[str]:
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file())


def test_an_archive_is_downloaded_once_and_kept_by_its_sha256(server: str, tmp_path: Path) -> None:
    digest = hashlib.sha256(BODY).hexdigest()
    source = f"{server}/pkg/ext-1.0.tar.gz#sha256={digest}"
    Served.requests.clear()
    first = cached_archive(tmp_path, source)
    assert first == tmp_path / f"sha256-{digest}" / "ext-1.0.tar.gz"
    assert first.read_bytes() == BODY
    assert cached_archive(tmp_path, source) == first
    assert Served.requests == ["/pkg/ext-1.0.tar.gz"]  # the second call used the cache


def test_bytes_that_do_not_match_the_pin_are_refused_and_not_kept(
    server: str, tmp_path: Path
) -> None:
    pinned = "0" * 64
    with pytest.raises(BuildFailed) as caught:
        cached_archive(tmp_path, f"{server}/pkg/ext-1.0.tar.gz#sha256={pinned}")
    message = str(caught.value)
    assert hashlib.sha256(BODY).hexdigest() in message and pinned in message
    assert "#sha256=" in message and "images.toml" in message
    assert leftovers(tmp_path) == []


def test_a_download_cut_short_leaves_nothing_that_looks_complete(
    server: str, tmp_path: Path
) -> None:
    digest = hashlib.sha256(BODY).hexdigest()
    with pytest.raises(BuildFailed) as caught:
        cached_archive(tmp_path, f"{server}/cut/ext-1.0.tar.gz#sha256={digest}")
    assert "ext-1.0.tar.gz" in str(caught.value) and "run again" in str(caught.value)
    assert leftovers(tmp_path) == []


def test_leftovers_of_killed_downloads_break_nothing(server: str, tmp_path: Path) -> None:
    digest = hashlib.sha256(BODY).hexdigest()
    folder, downloading = tmp_path / f"sha256-{digest}", tmp_path / DOWNLOADING
    folder.mkdir()
    downloading.mkdir()
    (folder / ".partial-k1ll3d").write_bytes(BODY[:100])  # an earlier version's leftover
    stale, live = downloading / "stale", downloading / "live"
    stale.write_bytes(b"half")
    live.write_bytes(b"being written")
    for path in (stale, live):
        os.utime(path, (0, 0))  # both old; only `live` is held by a download's lock
    with live.open("rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        got = cached_archive(tmp_path, f"{server}/pkg/ext-1.0.tar.gz#sha256={digest}")
        assert got.read_bytes() == BODY
        # The compile script takes the file it finds in the folder: only the archive is there.
        assert sorted(p.name for p in folder.iterdir()) == ["ext-1.0.tar.gz"]
        assert sorted(p.name for p in downloading.iterdir()) == ["live"]


def test_concurrent_downloads_of_one_archive_do_not_collide(server: str, tmp_path: Path) -> None:
    digest = hashlib.sha256(BODY).hexdigest()
    source = f"{server}/pkg/ext-1.0.tar.gz#sha256={digest}"
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: cached_archive(tmp_path, source), range(8)))
    assert {r.read_bytes() for r in results} == {BODY}
    assert leftovers(tmp_path) == [f"sha256-{digest}/ext-1.0.tar.gz"]
