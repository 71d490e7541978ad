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
import subprocess
from pathlib import Path

import zstandard

LEVEL = 1  # entries are zstd-compressed by ccache already; more effort buys little
_CHUNK = 1 << 20
_BOOKKEEPING = {"stats", "CACHEDIR.TAG", "ccache.conf"}


class ArchiveError(Exception):
    """The archive could not be read (truncated, corrupt, not ours)."""


def pack(folder: Path, dest: Path) -> int:
    """Write `folder`'s files to `dest` (tar + zstd); returns the archive's size in bytes.

    GNU tar walks and reads the files (Python's tarfile is several times slower per member);
    zstandard compresses on every core.
    """
    compressor = zstandard.ZstdCompressor(level=LEVEL, threads=-1)
    tar = subprocess.Popen(["tar", "-C", str(folder), "-cf", "-", "."],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert tar.stdout is not None
    with dest.open("wb") as raw:
        compressor.copy_stream(tar.stdout, raw, read_size=_CHUNK, write_size=_CHUNK)
    _, errors = tar.communicate()
    if tar.returncode != 0:
        raise OSError(f"tar could not read {folder}: {errors.decode(errors='replace')[-300:]}")
    return dest.stat().st_size


def unpack(archive_path: Path, folder: Path) -> None:
    """Replace `folder` with the archive's contents; raises ArchiveError, leaving it intact.

    GNU tar refuses absolute member names and names with '..', so an archive cannot write
    outside the staging folder.
    """
    staging = folder.with_name(folder.name + ".restoring")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    decompressor = zstandard.ZstdDecompressor()
    tar = subprocess.Popen(["tar", "-C", str(staging), "-xf", "-"], stdin=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    assert tar.stdin is not None
    problem = ""
    try:
        with archive_path.open("rb") as raw:
            decompressor.copy_stream(raw, tar.stdin, read_size=_CHUNK, write_size=_CHUNK)
    except (zstandard.ZstdError, BrokenPipeError) as exc:
        problem = str(exc) or type(exc).__name__
    finally:
        tar.stdin.close()
    errors = tar.stderr.read().decode(errors="replace") if tar.stderr else ""
    if tar.wait() != 0 or problem:
        shutil.rmtree(staging, ignore_errors=True)
        raise ArchiveError(f"{archive_path.name}: {problem or errors.strip()[-300:]}")
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
