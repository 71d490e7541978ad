"""The archive's bytes: zstd framing checked whole before use, then a counted tar stream.

zstandard's stream readers end quietly where a truncated frame ends (they return what they
have), and tarfile in stream mode ends quietly at a header it cannot read. Neither may pass
for a complete archive: `check_frames` walks the zstd frame and block headers (seeking over
the block contents, so it costs milliseconds for gigabytes) and `TarStream` checks, once
tarfile is done, that only tar's zero end blocks followed the last member.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, Protocol

from build_graph.ccache.members import ArchiveError

_ZSTD_MAGIC = 0xFD2FB528
_SKIPPABLE = 0x184D2A50  # ..5F: skippable frames (metadata), 4-byte size then data
_FCS_SIZES = (0, 2, 4, 8)  # by Frame_Content_Size_flag (0 means 1 byte when single-segment)
_DICT_SIZES = (0, 1, 2, 4)
_TAR_END = 2 * 512  # two zero blocks close every tar archive


def check_frames(path: Path) -> None:
    """Raise ArchiveError unless `path` is one or more complete zstd frames, end to end.

    Follows RFC 8878's frame layout; does not decompress (corrupt block contents are found
    by the decompressor, corrupt tar headers by tarfile and `TarStream`).
    """
    with path.open("rb") as raw:
        size = os.fstat(raw.fileno()).st_size
        if size == 0:
            raise ArchiveError("empty file")
        while raw.tell() < size:
            _skip_frame(raw, size)


def _skip_frame(raw: BinaryIO, size: int) -> None:
    magic = int.from_bytes(_take(raw, 4), "little")
    if magic & 0xFFFFFFF0 == _SKIPPABLE:
        _skip(raw, int.from_bytes(_take(raw, 4), "little"), size)
        return
    if magic != _ZSTD_MAGIC:
        raise ArchiveError(f"not a zstd frame at byte {raw.tell() - 4} (magic {magic:#x})")
    descriptor = _take(raw, 1)[0]
    single_segment, checksum = descriptor & 0x20, descriptor & 0x04
    fcs = _FCS_SIZES[descriptor >> 6] or (1 if single_segment else 0)
    _skip(raw, (0 if single_segment else 1) + _DICT_SIZES[descriptor & 0x03] + fcs, size)
    last = False
    while not last:
        header = int.from_bytes(_take(raw, 3), "little")
        last, kind, length = bool(header & 1), (header >> 1) & 3, header >> 3
        if kind == 3:
            raise ArchiveError(f"corrupt zstd block header at byte {raw.tell() - 3}")
        _skip(raw, 1 if kind == 1 else length, size)  # RLE blocks store one byte
    _skip(raw, 4 if checksum else 0, size)


def _take(raw: BinaryIO, count: int) -> bytes:
    data = raw.read(count)
    if len(data) != count:
        raise ArchiveError("zstd frame incomplete: the file ends inside a frame (truncated)")
    return data


def _skip(raw: BinaryIO, count: int, size: int) -> None:
    if raw.seek(count, os.SEEK_CUR) > size:
        raise ArchiveError("zstd frame incomplete: the file ends inside a frame (truncated)")


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class TarStream:
    """The decompressed bytes for tarfile, counted, with where the last non-zero byte was."""

    def __init__(self, source: Readable) -> None:
        self._source = source
        self.total = 0
        self.last_nonzero = 0  # offset just past the last non-zero byte read so far

    def read(self, size: int = -1, /) -> bytes:
        data = self._source.read(size)
        kept = len(data.rstrip(b"\0"))
        if kept:
            self.last_nonzero = self.total + kept
        self.total += len(data)
        return data

    def check_end(self, end: int) -> None:
        """Raise ArchiveError unless everything from `end` (where tarfile stopped reading
        members) to the end of the stream is tar's zero end blocks and padding."""
        while self.read(1 << 20):
            pass
        if self.last_nonzero > end or self.total < end + _TAR_END:
            raise ArchiveError(f"the tar stream ends early or breaks off at byte {end} "
                               "(no end-of-archive blocks after it): truncated or corrupt")
