"""The archive's bytes: zstd framing checked whole before use.

zstandard's stream readers end quietly where a truncated frame ends (they return what they
have), which may not pass for a complete archive: `check_frames` walks the zstd frame and
block headers (seeking over the block contents, so it costs milliseconds for gigabytes).
The tar stream inside is checked to its end by untar.TarStream.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from build_graph.untar import ArchiveError

_ZSTD_MAGIC = 0xFD2FB528
_SKIPPABLE = 0x184D2A50  # ..5F: skippable frames (metadata), 4-byte size then data
_FCS_SIZES = (0, 2, 4, 8)  # by Frame_Content_Size_flag (0 means 1 byte when single-segment)
_DICT_SIZES = (0, 1, 2, 4)


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
