"""HTTP pieces the registry client shares with requests that leave the registry's host.

A Response; a body read whole (up to one byte past a limit, for the caller to refuse) or
handed to a sink as it arrives; one-off requests to another host (a token realm, a blob's
storage after a redirect) on a connection of their own, with none of our headers past the
first hop; and where a redirect may lead at all (check_hop). registry/transport.py's Client
speaks to the registry itself.
"""

from __future__ import annotations

import http.client
import urllib.parse
from dataclasses import dataclass
from typing import Protocol

from build_graph.errors import UntrustedAnswer
from build_graph.oci import hosts, problems
from build_graph.oci.digest import Digest, parse_digest

TIMEOUT_S = 30.0
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def digest_header(self) -> Digest | None:
        """The Docker-Content-Digest header, parsed; None when there is none.
        Raises ValueError when it is there but is not a sha256 digest."""
        value = self.headers.get("docker-content-digest")
        return None if value is None else parse_digest(value)


def fetch(
    url: str, headers: dict[str, str] | None = None, redirects: int = MAX_REDIRECTS
) -> tuple[int, bytes]:
    """GET an absolute URL (a token service); follows redirects without `headers`.
    Raises RegistryError, in words, when the host cannot be reached."""
    response = elsewhere("GET", url, headers or {}, redirects=redirects)
    return response.status, response.body


def elsewhere(
    method: str,
    url: str,
    headers: dict[str, str],
    *,
    limit: int | None = None,
    redirects: int = MAX_REDIRECTS,
    sink: Sink | None = None,
) -> Response:
    """`method` on an absolute URL another host serves (a token realm, a blob's storage), on
    a connection of its own; redirects are followed with no headers at all: a storage
    redirect is a signed URL, and nothing of ours (credentials above all) goes further."""
    parts = urllib.parse.urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    try:  # a URL a registry named (a realm, a redirect) may be malformed: that is its error
        conn = cls(parts.netloc, timeout=TIMEOUT_S)
    except (ValueError, http.client.HTTPException) as exc:
        raise problems.unreachable(parts.netloc, exc) from None
    try:
        conn.request(
            method, parts.path + (f"?{parts.query}" if parts.query else ""), headers=headers
        )
        raw = conn.getresponse()
        body = body_of(raw, limit, sink)
        answer = Response(raw.status, {k.lower(): v for k, v in raw.getheaders()}, body)
    except (OSError, ValueError, http.client.HTTPException) as exc:
        raise problems.unreachable(parts.netloc, exc) from None
    finally:
        conn.close()
    if limit is not None and len(body) > limit:
        raise UntrustedAnswer(
            f"{parts.netloc} answered {url[:120]} with more than {limit} bytes; refusing it"
        )
    location = answer.headers.get("location")
    if answer.status in REDIRECTS and location and redirects > 0:
        return elsewhere(
            method,
            check_hop(url, urllib.parse.urljoin(url, location)),
            {},
            limit=limit,
            redirects=redirects - 1,
            sink=sink,
        )
    return answer


class Sink(Protocol):
    """Where a 200's body goes as it arrives: `start` begins it afresh (a read asked again
    starts over), `write` takes each piece."""

    def start(self) -> None: ...

    def write(self, data: bytes, /) -> object: ...


def body_of(raw: http.client.HTTPResponse, limit: int | None, sink: Sink | None) -> bytes:
    """The response's body: into `sink` when it is a 200 and there is one (then b""), else
    read here (up to one byte past `limit`, for the caller to refuse)."""
    if sink is None or raw.status != 200:
        return raw.read() if limit is None else raw.read(limit + 1)
    sink.start()
    while piece := raw.read(1 << 20):
        sink.write(piece)
    if raw.length:  # read(n) ends quietly where the connection did: say it ended short
        raise http.client.IncompleteRead(b"", raw.length)
    return b""


def check_hop(current: str, target: str) -> str:
    """`target`, where a redirect from `current` may lead; UntrustedAnswer otherwise: only to
    HTTP(S), never from HTTPS down to plain HTTP off this machine (a manifest read by tag
    could then be changed on the way), and never from a registry elsewhere into this
    machine or its link-local network (a cloud's metadata service lives there)."""
    here, there = urllib.parse.urlsplit(current), urllib.parse.urlsplit(target)
    if there.scheme not in ("http", "https") or not there.netloc:
        raise UntrustedAnswer(
            f"{here.netloc} sent us to {target[:200]!r}, which is no HTTP URL; refusing it"
        )
    if here.scheme == "https" and there.scheme == "http" and not hosts.is_loopback(there.netloc):
        raise UntrustedAnswer(
            f"{here.netloc} sent us from HTTPS to plain HTTP ({target[:200]}); refusing it"
        )
    if not hosts.is_loopback(here.netloc) and hosts.is_internal(there.netloc):
        raise UntrustedAnswer(
            f"{here.netloc} sent us to {there.netloc}, an address of this "
            "machine or its link-local network; refusing it"
        )
    return target
