"""Where a locked `.deb` is served besides the archive that served it: the snapshot archive
a stack names for that archive (`[apt] snapshots`).

Debian's and Ubuntu's main archives drop a version once it is superseded; their snapshot
archives keep every version under the same paths, by time: snapshot.debian.org serves the
archive as it was at `/archive/debian/<YYYYMMDDTHHMMSSZ>/` (its own documentation,
https://snapshot.debian.org/), snapshot.ubuntu.com likewise at `/ubuntu/<time>/`. A lock
records when it was resolved (`resolved`, aptlock/files.py); a snapshot URL with `{time}`
takes that time, so every file the lock names is one the snapshot held. Pure: URLs in, URLs
out. The bytes are checked against the lock wherever they come from (stages/inputs.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime

TIME = "{time}"
# The snapshot services' time stamp: 20261128T131200Z (UTC).
STAMP = re.compile(r"^[0-9]{8}T[0-9]{6}Z$")
_HTTP = re.compile(r"^https?://[^\s/]+(?:/[^\s]*)?$")


def now() -> str:
    """This moment as the snapshot archives name a time."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def problem(archive: str, snapshot: str) -> str | None:
    """What is wrong with one `[apt] snapshots` entry, or None."""
    if not _HTTP.match(archive) or TIME in archive:
        return f"{archive!r}: the key is the archive's URL as apt serves it (http or https)"
    if not _HTTP.match(snapshot.replace(TIME, "t")):
        return f"{archive!r}: {snapshot!r} is not an http(s) URL"
    if snapshot.count(TIME) > 1:
        return f"{archive!r}: {snapshot!r} names {TIME} more than once"
    return None


def urls(snapshots: Iterable[tuple[str, str]], resolved: str, url: str) -> tuple[str, ...]:
    """Where the snapshots named for the archive that served `url` serve the same file:
    the path below the archive's URL, below the snapshot's (its `{time}` the lock's
    `resolved`; a lock without one gets no URL from a snapshot that needs it)."""
    found = []
    for archive, snapshot in snapshots:
        prefix = archive.rstrip("/") + "/"
        if not url.startswith(prefix) or (TIME in snapshot and not STAMP.match(resolved)):
            continue
        found.append(snapshot.replace(TIME, resolved).rstrip("/") + "/" + url[len(prefix) :])
    return tuple(found)
