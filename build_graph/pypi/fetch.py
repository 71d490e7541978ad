"""Bounded HTTP reads from a package index or archive: whole small documents, byte ranges
of files, and whole files streamed to disk while hashed (the .debs an apt lock names, the
source archives compile.sources pins).

Everything an index answers is untrusted: every read has a timeout and a size bound, a
range answer must say (Content-Range) exactly the bytes asked for, a file must be as long
as its Content-Length says, and any failure is an `IndexUnreachable` (the network or the
server) or an `IndexAnswerRefused` (an answer that fails its check), never an empty
result. A user:password in a URL goes as Basic auth to that URL only and never into a
message.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import io
import re
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import IO
from urllib.parse import unquote, urlsplit

from build_graph.errors import (
    IndexAnswerRefused,
    IndexUnreachable,
    NotOnIndex,
    RangesUnsupported,
)
from build_graph.oci.hosts import is_loopback
from build_graph.settings import redact, redact_text, without_userinfo

TIMEOUT_S = 20
MAX_PAGE = 16 << 20  # torch's JSON page is ~0.4 MiB; an index page past 16 MiB is refused
_CHUNK = 1 << 20
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+)$")


def get(url: str, headers: Mapping[str, str], limit: int = MAX_PAGE) -> tuple[bytes, str]:
    """(body, content type) of a GET; at most `limit` bytes or IndexAnswerRefused."""
    with _open(url, dict(headers)) as response:
        body = response.read(limit + 1)
        kind = response.headers.get("Content-Type", "")
    if len(body) > limit:
        raise IndexAnswerRefused(f"{redact(url)}: the answer is larger than {limit} bytes; refused")
    return body, kind


def get_range(url: str, start: int, length: int) -> tuple[bytes, int]:
    """(bytes start..start+length-1, the file's total size), by one Range request.

    `start` < 0 asks for the last -start bytes (a suffix range). A server that ignores
    Range (200) is refused rather than read whole: a torch wheel is ~0.5 GiB."""
    wanted = f"bytes={start}" if start < 0 else f"bytes={start}-{start + length - 1}"
    with _open(url, {"Range": wanted}) as response:
        if response.status != 206:
            raise RangesUnsupported(
                f"{redact(url)}: asked for {wanted}, got HTTP "
                f"{response.status} (the file host does not answer "
                "range requests)"
            )
        found = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
        if found is None:
            raise IndexAnswerRefused(f"{redact(url)}: a range answer without a valid Content-Range")
        first, last, total = (int(g) for g in found.groups())
        size = -start if start < 0 else length
        body = response.read(size + 1)
    expected_first = max(total + start, 0) if start < 0 else start
    if (
        first != expected_first
        or last - first + 1 != len(body)
        or len(body) > size
        or last >= total
    ):
        raise IndexAnswerRefused(
            f"{redact(url)}: asked for {wanted}, got bytes {first}-{last}/"
            f"{total} and {len(body)} bytes; refused"
        )
    return body, total


def stream(url: str, out: IO[bytes], limit: int | None = None, timeout: float = TIMEOUT_S) -> str:
    """The sha256 (hex) of a GET's body, written to `out` as it arrives. Past `limit` bytes
    IndexAnswerRefused (a file of a locked size that grew is other bytes, whatever follows);
    a body shorter than its Content-Length IndexUnreachable (the connection ended)."""
    digest, received = hashlib.sha256(), 0
    with _open(url, {}, timeout) as response:
        length = response.headers.get("Content-Length") or ""
        expected = int(length) if length.isascii() and length.isdigit() else None
        while True:
            try:
                chunk = response.read(_CHUNK)
            except (http.client.HTTPException, OSError) as exc:
                raise IndexUnreachable(f"{redact(url)}: {redact_text(str(exc))}") from None
            if not chunk:
                break
            received += len(chunk)
            if limit is not None and received > limit:
                raise IndexAnswerRefused(f"{redact(url)}: more than {limit} bytes; refused")
            digest.update(chunk)
            out.write(chunk)  # a full disk is this machine's OSError, not the server's
    if expected is not None and received != expected:
        raise IndexUnreachable(
            f"{redact(url)}: the connection ended after {received} of {expected} bytes"
        )
    return digest.hexdigest()


def _open(
    url: str, headers: dict[str, str], timeout: float = TIMEOUT_S
) -> http.client.HTTPResponse:
    """The answer to a GET; a user:password in the URL (a private index's, as pip takes it)
    goes as Basic auth to that URL only, and never into a message."""
    shown = redact(url)
    if not url.startswith(("https://", "http://")):
        raise IndexAnswerRefused(f"{shown[:200]!r}: only http(s) URLs are read")
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise IndexAnswerRefused(f"{shown[:200]!r}: not a URL ({exc})") from None
    request = urllib.request.Request(
        without_userinfo(url), headers={"User-Agent": "build-graph", **headers}
    )
    host = parts.netloc.rpartition("@")[2]
    if parts.username is not None and parts.scheme != "https" and not is_loopback(host):
        raise IndexAnswerRefused(
            f"{shown[:200]}: credentials in a plain http:// URL would cross the network "
            "unencrypted; use https:// (or a loopback address)"
        )
    if parts.username is not None:
        # Unredirected: urllib copies ordinary headers onto a redirect, to any host; a
        # private index that redirects downloads to a blob store must not hand it the
        # password (and a presigned blob URL refuses a request that carries one).
        user = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        request.add_unredirected_header(
            "Authorization", f"Basic {base64.b64encode(user.encode()).decode()}"
        )
    try:
        response: http.client.HTTPResponse = urllib.request.urlopen(request, timeout=timeout)
        return response
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code == 404:
            raise NotOnIndex(f"{shown}: not found (HTTP 404)") from None
        if exc.code == 416:
            raise IndexAnswerRefused(f"{shown}: range not satisfiable (HTTP 416)") from None
        raise IndexUnreachable(f"{shown}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise IndexUnreachable(f"{shown}: {redact(str(reason))}") from None


class RangeFile(io.RawIOBase):
    """A remote file as a seekable read-only file, read in blocks by Range requests (for
    zipfile); at most `budget` bytes are fetched in all, then IndexAnswerRefused."""

    BLOCK = 1 << 16

    def __init__(self, url: str, budget: int) -> None:
        super().__init__()
        self.url, self.budget, self.position = url, budget, 0
        tail, self.size = self._fetch(-self.BLOCK, self.BLOCK)
        self._blocks: dict[int, bytes] = {}
        self._start_tail = self.size - len(tail)
        self._tail = tail

    def _fetch(self, start: int, length: int) -> tuple[bytes, int]:
        self.budget -= length
        if self.budget < 0:
            raise IndexAnswerRefused(
                f"{redact(self.url)}: reading its METADATA needs more "
                "than the bytes allowed; refused"
            )
        return get_range(self.url, start, length)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(base + offset, 0)
        return self.position

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        want = min(len(buffer), self.size - self.position)
        if want <= 0:
            return 0
        done = 0
        while done < want:  # blocks end at block edges and at the tail: fill the buffer
            data = self._read(self.position, want - done)
            if not data:
                break
            buffer[done : done + len(data)] = data
            done += len(data)
            self.position += len(data)
        return done

    def _read(self, start: int, length: int) -> bytes:
        if start >= self._start_tail:
            return self._tail[start - self._start_tail : start - self._start_tail + length]
        if length > self.BLOCK:  # the central directory: one request of its own size
            end = min(start + length, self._start_tail)
            return self._fetch(start, end - start)[0]
        first = start - start % self.BLOCK
        if first not in self._blocks:
            size = min(self.BLOCK, self._start_tail - first)
            self._blocks[first] = self._fetch(first, size)[0]
        block = self._blocks[first]
        return block[start - first : start - first + length]
