"""A hostile party for the tests: a reverse proxy on loopback, in front of a real registry,
that lies when told to.

It forwards every request (method, path, headers, body; Host unchanged, so the registry's
upload locations name the proxy) to the registry and returns its answer, except where a
lie is switched on:
- `swap`: a GET of a manifest by digest is answered with other bytes (a real manifest of
  something else) under the digest asked for, as a compromised mirror would;
- `digest_header`: manifests whose path matches `header_paths` carry this
  Docker-Content-Digest instead of the registry's (a path such as 'sha256:../../x');
- `fail`: requests whose path matches `fail_paths` (and method `fail_method`, if set, and
  `fail_when(method, path)`, if set) get HTTP `fail` and no forwarding, the first
  `fail_times` of them (all, if None);
- `head_length`: a HEAD whose path matches `head_paths` is answered with this
  Content-Length (and `head_type`, if set, as its Content-Type) instead of the registry's.
- `referrers_api`: not a lie but a feature distribution 2.8 lacks: the proxy answers as a
  registry with the OCI 1.1 referrers API does (a manifest PUT with a `subject` is answered
  with `OCI-Subject`, and `GET /v2/<repo>/referrers/<digest>` lists what was so PUT and not
  deleted since), so clients must use the API and write no referrers tag.
Standard library only; runs in a thread; `requests` lists (method, path) of what it saw.
"""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from tests.loopback_http import serving
from tests.support.registry import Registry
from tests.support.servers import free_port

REPORT_TAGS = re.compile(r"/manifests/sha256-[0-9a-f]{64}\.verify-")
BY_DIGEST = re.compile(r"/manifests/sha256:([0-9a-f]{64})$")
MANIFEST = re.compile(r"^/v2/(?P<repo>.+)/manifests/(?P<ref>[^/]+)$")
REFERRERS = re.compile(r"^/v2/(?P<repo>.+)/referrers/(?P<digest>sha256:[0-9a-f]{64})$")
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-connection",
    "content-length",
}


@dataclass
class Lies:
    swap: tuple[bytes, str] | None = None  # (body, media type)
    digest_header: str | None = None
    header_paths: re.Pattern[str] = REPORT_TAGS
    fail: int | None = None
    fail_paths: re.Pattern[str] = REPORT_TAGS
    fail_method: str | None = None
    fail_times: int | None = None
    fail_when: Callable[[str, str], bool] | None = None  # (method, path): fail this one?
    head_length: str | None = None
    head_type: str | None = None
    head_paths: re.Pattern[str] = REPORT_TAGS
    referrers_api: bool = False
    # (repository, subject digest) -> {artifact digest: its descriptor}, what the API lists
    referrers: dict[tuple[str, str], dict[str, dict[str, object]]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)

    def reset(self) -> None:
        self.swap, self.digest_header, self.fail, self.fail_when = None, None, None, None
        self.head_length, self.head_type = None, None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # What a request line it cannot parse (a TLS ClientHello) is answered with: a status line,
    # as Go's servers answer. The containerd image store's pusher tries HTTPS first on a
    # loopback registry and falls back to HTTP only when the answer starts with "HTTP/";
    # Python's default (HTTP/0.9: a bare body) left every push through the proxy failing.
    default_request_version = "HTTP/1.1"
    upstream: str
    lies: Lies

    def log_message(self, format: str, *args: object) -> None:
        return

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in _HOP:
                self.send_header(name, value)
        length = next((v for k, v in headers if k.lower() == "content-length"), None)
        self.send_header(
            "Content-Length", length if self.command == "HEAD" and length else str(len(body))
        )
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _forward(self) -> None:
        lies, path = self.lies, self.path.split("?", 1)[0]
        lies.requests.append((self.command, path))
        body = self._body()
        if (
            lies.fail is not None
            and lies.fail_paths.search(path)
            and lies.fail_method in (None, self.command)
            and lies.fail_times != 0
            and (lies.fail_when is None or lies.fail_when(self.command, path))
        ):
            if lies.fail_times is not None:
                lies.fail_times -= 1
            self._answer(lies.fail, [("Content-Type", "text/plain")], b"injected failure")
            return
        listing = REFERRERS.match(path)
        if lies.referrers_api and listing and self.command == "GET":
            listed = lies.referrers.get((listing["repo"], listing["digest"]), {})
            index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [*listed.values()]}
            self._answer(200, [("Content-Type", OCI_INDEX)], json.dumps(index).encode())
            return
        conn = http.client.HTTPConnection(self.upstream, timeout=60)
        try:
            conn.request(
                self.command,
                self.path,
                body=body or None,
                headers={k: v for k, v in self.headers.items() if k.lower() not in _HOP},
            )
            raw = conn.getresponse()
            status, headers, data = raw.status, raw.getheaders(), raw.read()
        finally:
            conn.close()
        asked = BY_DIGEST.search(path)
        if lies.swap is not None and asked and self.command in ("GET", "HEAD") and status == 200:
            data, media_type = lies.swap
            headers = [
                ("Content-Type", media_type),
                ("Content-Length", str(len(data))),
                ("Docker-Content-Digest", f"sha256:{asked[1]}"),
            ]
        if self.command == "HEAD" and lies.head_length is not None and lies.head_paths.search(path):
            headers = [
                (k, v) for k, v in headers if k.lower() not in ("content-length", "content-type")
            ]
            headers += [
                ("Content-Length", lies.head_length),
                ("Content-Type", lies.head_type or raw.getheader("Content-Type") or ""),
            ]
        if lies.referrers_api and status in (201, 202):
            headers += self._referrers(path, body, headers)
        if lies.digest_header is not None and lies.header_paths.search(path):
            headers = [(k, v) for k, v in headers if k.lower() != "docker-content-digest"]
            headers.append(("Docker-Content-Digest", lies.digest_header))
        self._answer(status, headers, data)

    def _referrers(
        self, path: str, body: bytes, headers: list[tuple[str, str]]
    ) -> list[tuple[str, str]]:
        """The API's bookkeeping after a manifest PUT or DELETE the registry took; the
        OCI-Subject header a PUT with a subject is answered with."""
        named = MANIFEST.match(path)
        if named is None:
            return []
        repo, lies = named["repo"], self.lies
        if self.command == "DELETE":
            for listed in lies.referrers.values():
                listed.pop(named["ref"], None)
            return []
        if self.command != "PUT":
            return []
        manifest = json.loads(body)
        subject = (manifest.get("subject") or {}).get("digest")
        digest = next((v for k, v in headers if k.lower() == "docker-content-digest"), None)
        if not subject or not digest:
            return []
        config = manifest.get("config") or {}
        lies.referrers.setdefault((repo, subject), {})[digest] = {
            "mediaType": manifest.get("mediaType"),
            "digest": digest,
            "size": len(body),
            "artifactType": manifest.get("artifactType") or config.get("mediaType"),
            "annotations": manifest.get("annotations") or {},
        }
        return [("OCI-Subject", subject)]

    do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = _forward


@contextmanager
def lying_proxy(upstream: str, port: int = 0) -> Iterator[tuple[str, Lies]]:
    """(the proxy's host:port on 127.0.0.1, its switchboard of lies), for the block. `port`:
    the address to take, where a test moves the registry and puts the proxy in its place
    (the stack's registry setting, and so every hash tag, stays the same)."""
    lies = Lies()
    handler = type("Handler", (_Handler,), {"upstream": upstream, "lies": lies})
    with serving(handler, port) as address:
        yield address, lies


@contextmanager
def lying_in_place_of(registry: Registry) -> Iterator[Lies]:
    """For the block, the registry moves to a free port and a lying proxy takes its address:
    the stack's registry setting, its hash tags and its build folder stay as they are, so
    nothing is rebuilt for the proxy's sake, and every request goes through the lies."""
    port = registry.port
    registry.stop()
    registry.port = free_port()
    registry.start()
    try:
        with lying_proxy(registry.address, port=port) as (_, lies):
            yield lies
    finally:
        registry.stop()
        registry.port = port
        registry.start()
