"""Blobs from disk into a registry, doing no work twice (the distribution spec's push API).

Per blob: a HEAD first (there already: nothing moves); else a cross-repository mount from
the repositories named (a parent tier's: `POST uploads/?mount=<digest>&from=<repo>`; 201
is mounted, 202 is the registry opening an upload instead, which is then used); else a
chunked upload: PATCHes of CHUNK bytes with Content-Range, the session's location and
offset recorded in `sessions` after each, so an upload interrupted (a killed runner, a
dropped connection) resumes where the registry says it stopped (a GET on the session
answers `Range: 0-<last byte>`) instead of from zero; then a PUT with `?digest=`. Blobs go
up WORKERS at a time. The bytes are read as they are on disk: nothing is compressed here.

Checked at the door: an upload location must stay under the repository on the same
registry; the digest a registry answers for a finished upload must be the blob's.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import urllib.parse
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from build_graph.errors import RegistryError, UntrustedAnswer
from build_graph.log import progress
from build_graph.oci import problems
from build_graph.oci.digest import Digest
from build_graph.oci.refs import Ref
from build_graph.registry.transport import Response, client

CHUNK = 64 << 20
WORKERS = 4
HOWS = ("present", "mounted", "sent", "resumed")  # how a blob got there (Moved.how)


@dataclass(frozen=True)
class Moved:
    """What one blob cost: bytes sent, and how it got there ('present', 'mounted', 'sent',
    'resumed')."""

    digest: Digest
    size: int
    sent: int
    how: str


def push_blobs(
    image: Ref, blobs: Iterable[tuple[Digest, Path]], mount_from: tuple[str, ...], sessions: Path
) -> list[Moved]:
    """Every blob (its digest, its file) into `image`'s repository, WORKERS at a time."""
    todo = list(dict.fromkeys(blobs))
    with ThreadPoolExecutor(max_workers=max(1, min(WORKERS, len(todo)))) as pool:
        return list(pool.map(lambda b: _one(image, b[0], b[1], mount_from, sessions), todo))


def _one(
    image: Ref, digest: Digest, path: Path, mount_from: tuple[str, ...], sessions: Path
) -> Moved:
    size = path.stat().st_size
    api = client(image.api_host)
    there = api.request("HEAD", image.repository, f"blobs/{digest}")
    if there.status == 200:
        return Moved(digest, size, 0, "present")
    if there.status != 404:
        raise problems.refused(image.host, f"a question about blob {digest}", there.status)
    record = sessions / f"{digest.hex}.json"
    location, offset = _resumed(image, record)
    how = "resumed" if location else "sent"
    if location is None:
        for source in mount_from:
            started = api.request(
                "POST",
                image.repository,
                f"blobs/uploads/?{urllib.parse.urlencode({'mount': str(digest), 'from': source})}",
                body=b"",
            )
            if started.status == 201:
                return Moved(digest, size, 0, "mounted")
            if started.status == 202:
                location = _location(image, started)
                break
    if location is None:
        location = start(image)
    sent = _send_chunks(image, digest, path, location, offset, record)
    record.unlink(missing_ok=True)
    return Moved(digest, size, sent, how)


def _send_chunks(
    image: Ref, digest: Digest, path: Path, location: str, offset: int, record: Path
) -> int:
    """PATCH the file from `offset` in CHUNK pieces, then PUT ?digest=; bytes sent."""
    api = client(image.api_host)
    sent = 0
    size = path.stat().st_size
    with path.open("rb") as source:
        source.seek(offset)
        while offset < size:
            piece = source.read(CHUNK)
            answer = api.request(
                "PATCH",
                image.repository,
                location,
                body=piece,
                headers={
                    "Content-Type": "application/octet-stream",
                    "Content-Range": f"{offset}-{offset + len(piece) - 1}",
                },
            )
            if answer.status != 202:
                raise problems.refused(
                    image.host,
                    f"uploading a chunk to {image.repository}",
                    answer.status,
                    answer.body,
                )
            location = _location(image, answer)
            offset += len(piece)
            sent += len(piece)
            _remember(record, location, offset)
    finish(image, location, digest)
    return sent


def start(image: Ref) -> str:
    """Open an upload session in `image`'s repository; its location (location())."""
    started = client(image.api_host).request("POST", image.repository, "blobs/uploads/", body=b"")
    if started.status != 202 or not started.headers.get("location"):
        raise problems.refused(
            image.host, f"starting an upload to {image.repository}", started.status, started.body
        )
    return _location(image, started)


def may_push(image: Ref) -> None:
    """The registry's own answer to "may this run push to `image`'s repository?": an upload
    session opened and cancelled at once (nothing is stored), asked once per repository per
    run, before an hours-long compile rather than after it. Raises RegistryError (exit 3)
    naming the repository and the fix (a token without push scope, a login missing)."""
    _may_push(image.host, image.repository)


@functools.cache
def _may_push(host: str, repository: str) -> None:
    image = Ref(host, repository, "latest")
    try:
        started = client(image.api_host).request("POST", repository, "blobs/uploads/", body=b"")
    except RegistryError as exc:  # unreachable for now: the push will say so if it lasts
        progress(f"warning: could not ask {host} for push rights on {repository}: {exc}")
        return
    if started.status in (401, 403, 404, 405):  # a push would meet the same answer first
        what = f"opening an upload to {repository} (push rights)"
        if started.status in (404, 405):  # no such repository (ECR), a read-only mirror
            raise RegistryError(
                f"the registry {host} answered HTTP {started.status} to {what}: the repository "
                "takes no pushes (create it, or point the stack's registry at one that does)"
            )
        raise problems.refused(host, what, started.status, started.body)
    if started.status != 202 or not started.headers.get("location"):
        progress(
            f"warning: {host} answered HTTP {started.status} when asked for push rights on "
            f"{repository}; going on (the push will say if it lasts)"
        )
        return
    # Cancelled; any answer will do (a robot may push and not delete: its token service
    # refuses a delete scope; the session then expires on its own, holding nothing).
    with contextlib.suppress(RegistryError):
        client(image.api_host).request("DELETE", repository, _location(image, started))


def finish(image: Ref, location: str, digest: Digest, body: bytes = b"") -> None:
    """Close the upload session `location` as the blob `digest` (with `body`, its last or
    only bytes); the registry checks the digest against what it received."""
    query = urllib.parse.urlencode({"digest": str(digest)})
    joiner = "&" if "?" in location else "?"
    done = client(image.api_host).request(
        "PUT",
        image.repository,
        f"{location}{joiner}{query}",
        body=body,
        headers={"Content-Type": "application/octet-stream"},
    )
    if done.status != 201:
        raise problems.refused(
            image.host, f"finishing an upload to {image.repository}", done.status, done.body
        )


def _location(image: Ref, answer: Response) -> str:
    """The upload session's path below /v2/<repository>/, from the Location header; the
    registry may name it absolute or relative, never elsewhere."""
    location = answer.headers.get("location", "")
    parts = urllib.parse.urlsplit(location)
    prefix = f"/v2/{image.repository}/"
    if (
        (parts.netloc and parts.netloc != image.api_host)
        or not parts.path.startswith(prefix)
        or ".." in parts.path
    ):
        raise UntrustedAnswer(
            f"the registry {image.host} sent an upload location outside {prefix}: "
            f"{location[:200]!r}"
        )
    return parts.path[len(prefix) :] + (f"?{parts.query}" if parts.query else "")


def _remember(record: Path, location: str, offset: int) -> None:
    record.parent.mkdir(parents=True, exist_ok=True)
    tmp = record.with_suffix(".tmp")
    tmp.write_text(json.dumps({"location": location, "offset": offset}))
    os.replace(tmp, record)


def _resumed(image: Ref, record: Path) -> tuple[str | None, int]:
    """An earlier upload of this blob the registry still holds: its session and how far
    the registry says it got (its `Range`); (None, 0) otherwise."""
    try:
        saved = json.loads(record.read_text())
        location = str(saved["location"])
    except (OSError, ValueError, KeyError, TypeError):
        return None, 0
    status = client(image.api_host).request("GET", image.repository, location)
    got = status.headers.get("range", "")
    if status.status != 204 or not got.startswith("0-"):
        record.unlink(missing_ok=True)
        return None, 0
    try:
        offset = int(got.removeprefix("0-")) + 1
    except ValueError:
        return None, 0
    return _location(image, status) if status.headers.get("location") else location, offset
