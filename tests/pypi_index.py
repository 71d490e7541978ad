"""A package index on 127.0.0.1 that answers what pypi.org answered (tests/recorded/).

A real HTTP server in a thread: project pages as PEP 691 JSON (or PEP 503 HTML), and each
recorded release's wheel as a real zip built here around its recorded METADATA, served by
Range requests the way files.pythonhosted.org serves them. It counts what it was asked.
Switches for hostile answers: `ranges=False` (200 with the whole file), `html=True`.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import socket
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

RECORDED = Path(__file__).resolve().parent / "recorded" / "pypi-torch.json"
REAL_CONNECT = socket.socket.connect  # taken before the unit tests' guard replaces it


def allow_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let this test connect to 127.0.0.1 only (the unit guard still refuses the rest)."""

    def connect(self: socket.socket, address: Any) -> None:
        if not (isinstance(address, tuple) and address[0] == "127.0.0.1"):
            raise AssertionError(f"unit tests may only connect to 127.0.0.1, not {address}")
        REAL_CONNECT(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


def recorded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(RECORDED.read_text())
    return data


def wheel_bytes(name: str, version: str, metadata: str) -> bytes:
    """A small real wheel: the METADATA (deflated, as in real wheels) first, then 256 KiB
    that do not compress, so that the reader's first read (the tail) does not hold it."""
    out = io.BytesIO()
    info = f"{name}-{version}.dist-info"
    filler = _filler()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{info}/METADATA", metadata)
        archive.writestr(f"{name}/_C.so", filler, zipfile.ZIP_STORED)
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\n")
        archive.writestr(f"{info}/RECORD", "")
    return out.getvalue()


@cache
def _filler() -> bytes:
    return b"".join(hashlib.sha256(b"%d" % i).digest() for i in range(3072))  # 96 KiB


@dataclass
class Index:
    """What the server answers; `requests` lists (method, path, Range) of each request."""

    projects: dict[str, dict[str, dict[str, str]]]
    html: bool = False
    ranges: bool = True
    requests: list[tuple[str, str]] = field(default_factory=list)
    auth: list[str] = field(default_factory=list)  # each request's Authorization header
    url: str = ""
    _built: dict[str, bytes] = field(default_factory=dict)

    def file(self, path: str) -> bytes | None:
        """The wheel at `path`, built when first asked for."""
        if path not in self._built:
            for name, releases in self.projects.items():
                for version, answer in releases.items():
                    if answer["path"] == path:
                        self._built[path] = wheel_bytes(name, version, answer["metadata"])
        return self._built.get(path)

    def page(self, name: str) -> tuple[bytes, str]:
        releases = self.projects.get(name)
        if releases is None:
            return b"", ""
        links = [(a["path"].rsplit("/", 1)[-1], a["path"]) for a in releases.values()]
        if self.html:
            anchors = "".join(f'<a href="{path}">{file}</a><br/>' for file, path in links)
            return f"<html><body>{anchors}</body></html>".encode(), "text/html"
        files = [
            {"filename": file, "url": f"{self.url}{path}", "hashes": {}, "yanked": False}
            for file, path in links
        ]
        body = {
            "meta": {"api-version": "1.1"},
            "name": name,
            "files": files,
            "versions": list(releases),
        }
        return json.dumps(body).encode(), "application/vnd.pypi.simple.v1+json"

    def wheel_reads(self) -> int:
        return sum(1 for _, path in self.requests if path.endswith(".whl"))


class Answering(BaseHTTPRequestHandler):
    """A handler that logs nothing and sends each answer whole, with its length."""

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for key, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)


def _handler(index: Index) -> type[BaseHTTPRequestHandler]:
    class Handler(Answering):
        def do_GET(self) -> None:
            index.requests.append(("GET", self.path))
            index.auth.append(self.headers.get("Authorization", ""))
            found = re.fullmatch(r"/simple/([a-z0-9-]+)/", self.path)
            if found:
                body, kind = index.page(found[1])
                return self._send(200 if kind else 404, body, {"Content-Type": kind})
            data = index.file(self.path)
            if data is None:
                return self._send(404, b"", {})
            wanted = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
            if not index.ranges or wanted is None:
                return self._send(200, data, {})
            if wanted[1]:
                first, last = int(wanted[1]), min(int(wanted[2] or len(data)), len(data) - 1)
            else:
                first, last = max(len(data) - int(wanted[2]), 0), len(data) - 1
            self._send(
                206, data[first : last + 1], {"Content-Range": f"bytes {first}-{last}/{len(data)}"}
            )

    return Handler


@contextmanager
def loopback_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """A real HTTP server on 127.0.0.1, in a thread, until the block ends; yields its port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def serving(index: Index) -> Iterator[Index]:
    """The index answering on 127.0.0.1 (index.url is its root) until the block ends."""
    with loopback_server(_handler(index)) as port:
        index.url = f"http://127.0.0.1:{port}"
        yield index
