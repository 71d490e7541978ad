"""Hostile compiler-cache archives as real bytes: tar written by tarfile (which writes any
header, devices and setuid bits included, without privileges), compressed with zstandard.

Each case sits between two good members, so an extraction that went member by member and
stopped at the bad one would leave the first behind: the restore must refuse the whole.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import zstandard

Entry = tuple[tarfile.TarInfo, bytes]
FIRST, LAST = "./0/aa/first-entryR", "./f/ff/last-entryR"


def member(
    name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"", link: str = "", **attrs: object
) -> Entry:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode, info.mtime = kind, link, 0o644, 1_700_000_000
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    for key, value in attrs.items():
        setattr(info, key, value)
    return info, data


def tar_bytes(entries: list[Entry]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


def compress(tar: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=1).compress(tar)


def wrapped(middle: list[Entry]) -> bytes:
    """Good member, the given ones, good member: as a .tar.zst."""
    return compress(
        tar_bytes(
            [member(FIRST, data=os.urandom(3000)), *middle, member(LAST, data=os.urandom(3000))]
        )
    )


@dataclass(frozen=True)
class Case:
    """An archive's bytes and a piece of the reason the restore must give for refusing it."""

    reason: str
    make: Callable[[Path], bytes]  # given a folder outside the cache that must stay empty


def _cut_tar_end(outside: Path) -> bytes:
    whole = tar_bytes([member(FIRST, data=os.urandom(3000))])
    return compress(whole[: 512 + 3072])  # header and data, no end blocks, no padding


def _corrupt_second_header(outside: Path) -> bytes:
    tar = bytearray(
        tar_bytes([member(FIRST, data=os.urandom(3000)), member(LAST, data=os.urandom(3000))])
    )
    second = tar.index(b"last-entryR") - (len(LAST) - len("last-entryR")) + 100
    tar[second : second + 8] = b"garbage!"  # the mode field: the header checksum fails
    return compress(bytes(tar))


def _cut_in_half(outside: Path) -> bytes:
    whole = wrapped([member("./1/bb/bigR", data=os.urandom(200_000))])
    return whole[: len(whole) // 2]


CASES: dict[str, Case] = {
    "setuid file": Case("setuid", lambda o: wrapped([member("./0/suid", mode=0o4755)])),
    "setgid folder": Case(
        "setgid", lambda o: wrapped([member("./0/sg/", tarfile.DIRTYPE, mode=0o2755)])
    ),
    "device node": Case(
        "device node",
        lambda o: wrapped([member("./0/null", tarfile.CHRTYPE, devmajor=1, devminor=3)]),
    ),
    "fifo": Case("FIFO", lambda o: wrapped([member("./0/pipe", tarfile.FIFOTYPE)])),
    "dot-dot": Case("'..'", lambda o: wrapped([member("./0/../../escape", data=b"x")])),
    "absolute path": Case("absolute", lambda o: wrapped([member(str(o / "abs"), data=b"x")])),
    "symlink to /etc": Case(
        "'/etc'", lambda o: wrapped([member("./etc", tarfile.SYMTYPE, link="/etc")])
    ),
    "symlink climbing out": Case(
        "leaves the cache folder",
        lambda o: wrapped([member("./0/up", tarfile.SYMTYPE, link="../../outside")]),
    ),
    "symlink climbing after descending": Case(
        "leaves the cache folder",
        lambda o: wrapped(
            [
                member("./0/self", tarfile.SYMTYPE, link="."),
                member("./0/s", tarfile.SYMTYPE, link="self/../../.."),
            ]
        ),
    ),
    "write through a symlink": Case(
        "written through a symlink",
        lambda o: wrapped(
            [member("./0/in", tarfile.SYMTYPE, link="aa"), member("./0/in/x", data=b"x")]
        ),
    ),
    "hardlink outside": Case(
        "hardlink target",
        lambda o: wrapped([member("./0/h", tarfile.LNKTYPE, link=str(o / "target"))]),
    ),
    "hardlink dot-dot": Case(
        "hardlink target",
        lambda o: wrapped([member("./0/h", tarfile.LNKTYPE, link="../outside-target")]),
    ),
    "name too long": Case(
        "longer than a file system allows",
        lambda o: wrapped([member("./0/" + "n" * 300, data=b"x")]),
    ),
    "control character": Case(
        "non-printable", lambda o: wrapped([member("./0/a\x1b[2Jb", data=b"x")])
    ),
    "NUL in a pax name": Case(
        "non-printable",
        lambda o: wrapped([member("./0/ab", data=b"x", pax_headers={"path": "./0/a\x00b"})]),
    ),
    "appears twice": Case(
        "appears twice",
        lambda o: wrapped(
            [member("./0/dup", data=b"x"), member("./0/dup", tarfile.SYMTYPE, link="aa")]
        ),
    ),
    "zstd cut in half": Case("zstd frame incomplete", _cut_in_half),
    "garbage after the frame": Case("not a zstd frame", lambda o: wrapped([]) + b"junk!!"),
    "tar without end blocks": Case("ends early", _cut_tar_end),
    "corrupt header mid-archive": Case("ends early", _corrupt_second_header),
}


def accepted_owners_and_modes() -> bytes:
    """Owned by root and by another user, with group/other write and exec bits: restored,
    but as the current user's files with at most 0o755."""
    return wrapped(
        [
            member(
                "./1/root-owned", data=b"r", uid=0, gid=0, uname="root", gname="root", mode=0o777
            ),
            member(
                "./1/other-owned",
                data=b"o",
                uid=4242,
                gid=4242,
                uname="mallory",
                gname="mallory",
                mode=0o666,
            ),
        ]
    )


def accepted_links() -> bytes:
    """Links that stay inside: relative symlinks (one climbing to the root) and a hardlink."""
    return wrapped(
        [
            member("./2/", tarfile.DIRTYPE, mode=0o755),
            member("./2/entry", tarfile.SYMTYPE, link="../0/aa/first-entryR"),
            member("./2/root", tarfile.SYMTYPE, link=".."),
            member("./2/hard", tarfile.LNKTYPE, link="./0/aa/first-entryR"),
        ]
    )
