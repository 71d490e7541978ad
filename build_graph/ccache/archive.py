"""A compiler-cache folder as one zstd-compressed tar, packed and unpacked in streams.

ccache already compresses each entry, so the archive uses a fast zstd level on all cores:
the point is one object to move, quickly, not a smaller one. Packing reads our own folder
with GNU tar; unpacking reads an archive from the bucket, which is untrusted, with Python's
tarfile and a check of every member and of the tar stream's end (untar.py), after a check
of the zstd framing (stream.py). It goes to a sibling folder first and replaces the cache
only when the whole archive was read, so a truncated, corrupt or hostile archive never
leaves a half-restored cache behind.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import zstandard

from build_graph.ccache.stream import check_frames
from build_graph.untar import ArchiveError as ArchiveError
from build_graph.untar import replace_folder_from

LEVEL = 1  # entries are zstd-compressed by ccache already; more effort buys little
_CHUNK = 1 << 20
# The last compile's timings (stages/compile_clock.py) travel in the archive; like ccache's
# counters they change on every compile and say nothing of whether entries changed.
HISTORY = "build-graph-compile.json"
_BOOKKEEPING = {"stats", "CACHEDIR.TAG", "ccache.conf", HISTORY}


def pack(folder: Path, dest: Path) -> int:
    """Write `folder`'s files to `dest` (tar + zstd); returns the archive's size in bytes.

    GNU tar walks and reads the files (Python's tarfile is several times slower per member);
    zstandard compresses on every core. The folder may be in use (a save during a running
    compile): ccache writes each entry to a temporary file and renames it, so an entry is
    whole or absent; its temporary folder is left out, and a file that changed or vanished
    while tar read it (a counter, an entry ccache's cleanup evicted) is tar's exit 1, not
    a failure.
    """
    compressor = zstandard.ZstdCompressor(level=LEVEL, threads=-1)
    tar = subprocess.Popen(
        [
            "tar",
            "-C",
            str(folder),
            "--exclude=./tmp",
            "--ignore-failed-read",
            "--warning=no-file-changed",
            "--warning=no-file-removed",
            "-cf",
            "-",
            ".",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert tar.stdout is not None
    with dest.open("wb") as raw:
        compressor.copy_stream(tar.stdout, raw, read_size=_CHUNK, write_size=_CHUNK)
    _, errors = tar.communicate()
    said = errors.decode(errors="replace")
    # 1: some file changed while read (GNU tar's manual); a file it may not read is no
    # such change: an archive without it would be saved as whole
    if tar.returncode not in (0, 1) or "Permission denied" in said:
        raise OSError(f"tar could not read {folder}: {said[-300:]}")
    return dest.stat().st_size


def unpack(archive_path: Path, folder: Path, limit: int | None = None) -> None:
    """Replace `folder` with the archive's contents, or raise ArchiveError leaving it as it was.

    The archive is untrusted: its zstd framing is checked whole before anything is written,
    then the tar stream goes through untar's door (each member checked before it is written,
    a fresh sibling folder swapped in only once the stream ended where it should). OSError:
    local disk trouble (nothing is left behind either).
    """
    check_frames(archive_path)
    with archive_path.open("rb") as raw:
        reader = zstandard.ZstdDecompressor().stream_reader(
            raw, read_size=_CHUNK, read_across_frames=True
        )
        try:
            replace_folder_from(reader, folder, limit)
        except zstandard.ZstdError as exc:
            raise ArchiveError(f"{type(exc).__name__}: {exc}") from None


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
        size = _size(path)
        if size is not None:
            digest.update(f"{relative}\0{size}\n".encode())
    return digest.hexdigest()


def folder_size(folder: Path) -> int:
    return sum(_size(p) or 0 for p in _files(folder))


def _size(path: Path) -> int | None:
    """None for a file gone since the walk saw it (a running compile's cleanup)."""
    try:
        return path.lstat().st_size
    except FileNotFoundError:
        return None


def _files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [Path(d) / f for d, _, files in os.walk(folder) for f in files]
