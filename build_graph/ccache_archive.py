"""A compiler-cache folder as one zstd-compressed tar, packed and unpacked in streams.

ccache already compresses each entry, so the archive uses a fast zstd level on all cores:
the point is one object to move, quickly, not a smaller one. Unpacking goes to a sibling
folder first and replaces the cache only when the whole archive was read, so a truncated or
corrupt archive never leaves a half-restored cache behind.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
from pathlib import Path

import zstandard

LEVEL = 1  # entries are zstd-compressed by ccache already; more effort buys little
_CHUNK = 1 << 20
_BOOKKEEPING = {"stats", "CACHEDIR.TAG", "ccache.conf"}


class ArchiveError(Exception):
    """The archive could not be read (truncated, corrupt, not ours)."""


def pack(folder: Path, dest: Path) -> int:
    """Write `folder`'s files to `dest` (tar + zstd); returns the archive's size in bytes."""
    compressor = zstandard.ZstdCompressor(level=LEVEL, threads=-1)
    with dest.open("wb") as raw, compressor.stream_writer(raw, closefd=False) as stream, \
            tarfile.open(fileobj=stream, mode="w|", bufsize=_CHUNK) as archive:
        for path in sorted(_files(folder)):
            archive.add(path, arcname=path.relative_to(folder).as_posix(), recursive=False)
    return dest.stat().st_size


def unpack(archive_path: Path, folder: Path) -> None:
    """Replace `folder` with the archive's contents; raises ArchiveError, leaving it intact."""
    staging = folder.with_name(folder.name + ".restoring")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    decompressor = zstandard.ZstdDecompressor()
    try:
        with archive_path.open("rb") as raw, decompressor.stream_reader(raw) as stream, \
                tarfile.open(fileobj=stream, mode="r|", bufsize=_CHUNK) as archive:
            archive.extractall(staging, filter="data")
    except (tarfile.TarError, zstandard.ZstdError, OSError, EOFError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise ArchiveError(f"{archive_path.name}: {exc or type(exc).__name__}") from None
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)


def fingerprint(folder: Path) -> str:
    """Changes when a cache entry is added, removed or resized.

    Entries are content-addressed (the name is the key), so name and size identify them.
    ccache's counters, locks and temporary files, and the times it touches on every hit,
    are left out: a compile that only hit the cache leaves the fingerprint unchanged.
    """
    digest = hashlib.sha256()
    for path in sorted(_files(folder)):
        relative = path.relative_to(folder)
        if path.name in _BOOKKEEPING or path.suffix == ".lock" or "tmp" in relative.parts:
            continue
        digest.update(f"{relative}\0{path.stat().st_size}\n".encode())
    return digest.hexdigest()


def folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in _files(folder))


def _files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [Path(d) / f for d, _, files in os.walk(folder) for f in files]
