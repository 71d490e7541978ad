"""Untrusted tar streams, unpacked safely: each member is checked before it is written.

Two doors use it: compiler-cache archives from a bucket (ccache/archive.py: anyone with
write access to the bucket controls them) and the files a container on a remote Docker
daemon hands back (docker/containers.py: a compile script's output). Either may run as
whoever runs the build (often root). `replace_folder_from` writes a fresh sibling folder and
puts it in the destination's place only once the whole stream was read and admitted, so a
truncated, corrupt, oversized or hostile stream never leaves a half-written folder behind.

A member is admitted only as one of four kinds, with a path that stays inside the
destination folder however it is resolved:

- names are relative, printable (no NUL, control, format or separator characters), and never
  contain '..'; no member is written through a symlink, and no path appears twice, so a later
  member can never land where an earlier symlink points;
- regular files and folders; no setuid, setgid or sticky bit (the archive is refused, not
  silently repaired: a cache never needs them); owners are never applied;
- symlinks whose target is relative and may climb ('..') only at its start, at most as far as
  the link's own folder is deep: every link then resolves inside the folder, links to links
  included, whatever order the members come in;
- hardlinks to a regular file (or a hardlink to one) written earlier by the same archive.

Anything else (devices, FIFOs, absolute names, escaping links) raises ArchiveError, and the
caller drops the whole archive. Where Python has tarfile's `data` filter (3.11.4+), it runs
as a second line after these checks.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from build_graph.fs import replace_folder

Kind = Literal["file", "dir", "symlink", "hardlink"]
_KINDS: dict[bytes, Kind] = {
    tarfile.REGTYPE: "file",
    tarfile.AREGTYPE: "file",
    tarfile.DIRTYPE: "dir",
    tarfile.SYMTYPE: "symlink",
    tarfile.LNKTYPE: "hardlink",
}
_SPECIAL_BITS = 0o7000  # setuid, setgid, sticky
_DATA_FILTER: Callable[[tarfile.TarInfo, str], tarfile.TarInfo] | None = getattr(
    tarfile, "data_filter", None
)

MAX_NAME = 255  # bytes of one path component (NAME_MAX on Linux)
MAX_PATH = 1024  # bytes of a member's whole name: ccache's own are under 100
_CHUNK = 1 << 20
_TAR_END = 2 * 512  # two zero blocks close every tar archive


class ArchiveError(Exception):
    """The archive is unreadable or unsafe (truncated, corrupt, hostile): none of it is used."""


@dataclass(frozen=True)
class Member:
    """An admitted member: `path` relative to the destination, '/'-separated, normalised."""

    kind: Kind
    path: str
    link: str  # the symlink's target as stored, or the hardlink's normalised path; else ""
    mode: int  # permission bits to apply to a file (at most 0o755, owner read/write)
    mtime: int
    new_folders: tuple[str, ...]  # parents not written yet, to create first (outermost first)


class Guard:
    """Admits the members of one archive, in order, for extraction under `root`.

    Keeps the kind of every path admitted so far (the staging folder is fresh and only this
    extraction writes to it, so that map is what is on disk).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._kinds: dict[str, Kind] = {"": "dir"}

    def admit(self, info: tarfile.TarInfo) -> Member | None:
        """The member to write, None for the archive's own root ('./'); raises ArchiveError."""
        kind = _KINDS.get(info.type)
        if kind is None:
            raise ArchiveError(
                f"{info.name!r}: {_type_name(info)} (only files, folders and links are accepted)"
            )
        path = _relative(info.name, info.name)
        if info.mode & _SPECIAL_BITS:
            raise ArchiveError(
                f"{info.name!r}: mode {info.mode:o} has setuid, setgid or sticky bits"
            )
        new_folders = self._check_place(info.name, path, kind)
        link = self._check_link(info, path, kind)
        if _DATA_FILTER is not None and kind in ("symlink", "hardlink"):
            # The standard library's rules as a second line, for links only: it resolves
            # every path component on disk, which doubled the restore of a 20k-file cache;
            # for files and folders the name rules and the map of kinds decide it already.
            try:
                _DATA_FILTER(info, str(self.root))
            except tarfile.FilterError as exc:
                raise ArchiveError(f"{info.name!r}: {exc}") from None
        self._kinds[path] = kind
        if path == "":
            return None
        mode = info.mode & 0o755 if info.mode & 0o100 else info.mode & 0o644
        return Member(kind, path, link, mode | 0o600, int(info.mtime), new_folders)

    def _check_place(self, name: str, path: str, kind: Kind) -> tuple[str, ...]:
        """The parents are folders (or not yet there: returned), and the path is new."""
        parts = path.split("/") if path else []
        new_folders: list[str] = []
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            above = self._kinds.get(parent)
            if above is None:  # extraction creates it
                self._kinds[parent] = "dir"
                new_folders.append(parent)
            elif above != "dir":
                raise ArchiveError(f"{name!r}: would be written through a {above} ({parent!r})")
        seen = self._kinds.get(path)
        if seen is not None and not (seen == "dir" and kind == "dir"):
            raise ArchiveError(f"{name!r}: appears twice in the archive")
        return tuple(new_folders)

    def _check_link(self, info: tarfile.TarInfo, path: str, kind: Kind) -> str:
        if kind == "hardlink":
            target = _relative(info.linkname, info.name, "hardlink target")
            if self._kinds.get(target) not in ("file", "hardlink"):
                raise ArchiveError(
                    f"{info.name!r}: hardlink to {info.linkname!r}, which is not "
                    "a file of this archive written before it"
                )
            return target
        if kind == "symlink":
            _check_symlink(info, path)
            return info.linkname
        return ""


def _relative(name: str, member: str, what: str = "name") -> str:
    """`name` as a normalised relative path ('' for the root); raises ArchiveError."""
    if not name or not name.isprintable():
        raise ArchiveError(
            f"{member!r}: {what} is empty or has control or non-printable characters"
        )
    if name.startswith("/"):
        raise ArchiveError(f"{member!r}: {what} {name!r} is an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    # Names the file system cannot hold would fail as local disk trouble (OSError), not as
    # a refused archive, and a refused archive is the one the next save replaces.
    if len(name.encode()) > MAX_PATH or any(len(p.encode()) > MAX_NAME for p in parts):
        raise ArchiveError(f"{member[:80]!r}...: {what} is longer than a file system allows")
    if ".." in parts:
        raise ArchiveError(f"{member!r}: {what} {name!r} contains '..'")
    return "/".join(parts)


def _check_symlink(info: tarfile.TarInfo, path: str) -> None:
    """A relative target that climbs only at its start, and no higher than the folder."""
    target = info.linkname
    if not target or not target.isprintable() or target.startswith("/"):
        raise ArchiveError(
            f"{info.name!r}: symlink to {target!r} (absolute, empty or non-printable)"
        )
    parts = [p for p in target.split("/") if p not in ("", ".")]
    climbs = next((i for i, p in enumerate(parts) if p != ".."), len(parts))
    depth = path.count("/")  # the link's own folder, in levels below the root
    if ".." in parts[climbs:] or climbs > depth:
        raise ArchiveError(
            f"{info.name!r}: symlink to {target!r} leaves the cache folder "
            "(or climbs after descending)"
        )


def _type_name(info: tarfile.TarInfo) -> str:
    if info.ischr() or info.isblk():
        return "device node"
    if info.isfifo():
        return "FIFO"
    return f"member of tar type {info.type!r}"


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


def replace_folder_from(source: Readable, folder: Path, limit: int | None = None) -> None:
    """Replace `folder` with the tar stream's contents, or raise ArchiveError (or OSError:
    local disk trouble) leaving it as it was. Files belong to the user running this, with
    at most 0o755 of their mode. `limit`: the most bytes the tar stream may hold."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.restoring-"))
    staging.chmod(0o755)  # as a folder made by mkdir: a container may not be root
    try:
        _extract(TarStream(source, limit), staging)
        replace_folder(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone already unless something failed


def _extract(stream: TarStream, staging: Path) -> None:
    guard = Guard(staging)
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:  # type: ignore[call-overload]
            while (info := tar.next()) is not None:
                tar.members.clear()  # tarfile keeps every header; a cache has 100k+
                member = guard.admit(info)
                if member is not None:
                    _write(tar, info, member, staging)
            stream.check_end(tar.offset)
    except (tarfile.TarError, EOFError) as exc:
        raise ArchiveError(f"{type(exc).__name__}: {exc}") from None


def _write(tar: tarfile.TarFile, info: tarfile.TarInfo, member: Member, staging: Path) -> None:
    """Write one admitted member; never follows or replaces anything already there."""
    for folder in member.new_folders:
        (staging / folder).mkdir()
    target = staging / member.path
    if member.kind == "dir":
        target.mkdir(exist_ok=True)  # a folder may come after files that it holds
    elif member.kind == "symlink":
        os.symlink(member.link, target)
    elif member.kind == "hardlink":
        os.link(staging / member.link, target, follow_symlinks=False)
    else:
        source = tar.extractfile(info)
        assert source is not None  # a regular file always has a reader
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with source, os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(source, out, _CHUNK)
            os.fchmod(fd, member.mode)
            os.utime(fd, (member.mtime, member.mtime))  # ccache evicts the oldest first


class TarStream:
    """The tar bytes for tarfile, counted (at most `limit`), with where the last non-zero
    byte was: tarfile in stream mode ends quietly at a header it cannot read, which may not
    pass for a complete archive."""

    def __init__(self, source: Readable, limit: int | None = None) -> None:
        self._source, self._limit = source, limit
        self.total = 0
        self.last_nonzero = 0  # offset just past the last non-zero byte read so far

    def read(self, size: int = -1, /) -> bytes:
        data = self._source.read(size)
        kept = len(data.rstrip(b"\0"))
        if kept:
            self.last_nonzero = self.total + kept
        self.total += len(data)
        if self._limit is not None and self.total > self._limit:
            raise ArchiveError(f"more than {self._limit} bytes (the limit for this folder)")
        return data

    def check_end(self, end: int) -> None:
        """Raise ArchiveError unless everything from `end` (where tarfile stopped reading
        members) to the end of the stream is tar's zero end blocks and padding."""
        while self.read(_CHUNK):
            pass
        if self.last_nonzero > end or self.total < end + _TAR_END:
            raise ArchiveError(
                f"the tar stream ends early or breaks off at byte {end} "
                "(no end-of-archive blocks after it): truncated or corrupt"
            )
