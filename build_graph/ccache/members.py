"""The door for archive members: each tar header from the bucket is checked before it is written.

An archive comes from a store that anyone with write access to the bucket controls, and the
restore runs as whoever runs the build (often root). A member is admitted only as one of four
kinds, with a path that stays inside the destination folder however it is resolved:

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

import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Kind = Literal["file", "dir", "symlink", "hardlink"]
_KINDS: dict[bytes, Kind] = {tarfile.REGTYPE: "file", tarfile.AREGTYPE: "file",
                             tarfile.DIRTYPE: "dir", tarfile.SYMTYPE: "symlink",
                             tarfile.LNKTYPE: "hardlink"}
_SPECIAL_BITS = 0o7000  # setuid, setgid, sticky
_DATA_FILTER: Callable[[tarfile.TarInfo, str], tarfile.TarInfo] | None = getattr(
    tarfile, "data_filter", None)

MAX_NAME = 255  # bytes of one path component (NAME_MAX on Linux)
MAX_PATH = 1024  # bytes of a member's whole name: ccache's own are under 100


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
            raise ArchiveError(f"{info.name!r}: {_type_name(info)} (only files, folders and "
                               "links are accepted)")
        path = _relative(info.name, info.name)
        if info.mode & _SPECIAL_BITS:
            raise ArchiveError(f"{info.name!r}: mode {info.mode:o} has setuid, setgid or "
                               "sticky bits")
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
                raise ArchiveError(f"{info.name!r}: hardlink to {info.linkname!r}, which is not "
                                   "a file of this archive written before it")
            return target
        if kind == "symlink":
            _check_symlink(info, path)
            return info.linkname
        return ""


def _relative(name: str, member: str, what: str = "name") -> str:
    """`name` as a normalised relative path ('' for the root); raises ArchiveError."""
    if not name or not name.isprintable():
        raise ArchiveError(f"{member!r}: {what} is empty or has control or non-printable "
                           "characters")
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
        raise ArchiveError(f"{info.name!r}: symlink to {target!r} (absolute, empty or "
                           "non-printable)")
    parts = [p for p in target.split("/") if p not in ("", ".")]
    climbs = next((i for i, p in enumerate(parts) if p != ".."), len(parts))
    depth = path.count("/")  # the link's own folder, in levels below the root
    if ".." in parts[climbs:] or climbs > depth:
        raise ArchiveError(f"{info.name!r}: symlink to {target!r} leaves the cache folder "
                           "(or climbs after descending)")


def _type_name(info: tarfile.TarInfo) -> str:
    if info.ischr() or info.isblk():
        return "device node"
    if info.isfifo():
        return "FIFO"
    return f"member of tar type {info.type!r}"
