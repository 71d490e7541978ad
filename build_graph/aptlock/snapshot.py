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
from urllib.parse import urlsplit

from build_graph.settings import redact

TIME = "{time}"
# The snapshot services' time stamp: 20261128T131200Z (UTC).
STAMP = re.compile(r"[0-9]{8}T[0-9]{6}Z")


def now() -> str:
    """This moment as the snapshot archives name a time."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def is_stamp(text: str) -> bool:
    """Whether `text` is a time as the snapshot archives name one (a real date and time)."""
    if not STAMP.fullmatch(text):
        return False
    try:
        datetime.strptime(text, "%Y%m%dT%H%M%SZ")
    except ValueError:
        return False
    return True


def problem(archive: str, snapshot: str) -> str | None:
    """What is wrong with one `[apt] snapshots` entry, or None (URLs said redacted)."""
    shown = f"{redact(archive)!r} = {redact(snapshot)!r}"
    key = _url_problem(archive)
    if key is not None or TIME in archive:
        return f"{shown}: the key is the archive's URL as the lock's `url`s start ({key or TIME})"
    value = _url_problem(snapshot.replace(TIME, "t"), credentials=True)
    if value is not None:
        return f"{shown}: the snapshot's URL {value}"
    if snapshot.count(TIME) > 1:
        return f"{shown}: names {TIME} more than once"
    return None


def _url_problem(url: str, credentials: bool = False) -> str | None:
    try:
        parts = urlsplit(url)
    except ValueError:
        return "is not a URL"
    if parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in url):
        return "is not an http(s) URL"
    if parts.query or parts.fragment:
        return "has a query or fragment (the file's path goes below it)"
    if parts.username is not None or parts.password is not None:
        if not credentials:
            return "carries credentials"
        if parts.scheme != "https":
            return "carries credentials over plain http (use https)"
    return None


def urls(snapshots: Iterable[tuple[str, str]], resolved: str, url: str) -> tuple[str, ...]:
    """Where the snapshots named for the archive that served `url` serve the same file:
    the path below the archive's URL, below the snapshot's (its `{time}` the lock's
    `resolved`; a lock without one gets no URL from a snapshot that needs it)."""
    found = []
    for archive, snapshot in snapshots:
        prefix = archive.rstrip("/") + "/"
        if not url.startswith(prefix) or (TIME in snapshot and not is_stamp(resolved)):
            continue
        found.append(snapshot.replace(TIME, resolved).rstrip("/") + "/" + url[len(prefix) :])
    return tuple(found)
