"""A compiler-cache folder as one zstd-compressed tar, packed and unpacked in streams.

ccache already compresses each entry, so the archive uses a fast zstd level on all cores:
the point is one object to move, quickly, not a smaller one. Packing reads our own folder
with GNU tar; unpacking reads an archive from the bucket, which is untrusted, with Python's
tarfile and a check of every member (members.py) and of the stream's ends (stream.py). It
goes to a sibling folder first and replaces the cache only when the whole archive was read,
so a truncated, corrupt or hostile archive never leaves a half-restored cache behind.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import zstandard

from build_graph.ccache.members import ArchiveError as ArchiveError
from build_graph.ccache.members import Guard, Member
from build_graph.ccache.stream import TarStream, check_frames

LEVEL = 1  # entries are zstd-compressed by ccache already; more effort buys little
_CHUNK = 1 << 20
_BOOKKEEPING = {"stats", "CACHEDIR.TAG", "ccache.conf"}


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
    """Replace `folder` with the archive's contents, or raise ArchiveError leaving it as it was.

    The archive is untrusted: its zstd framing is checked whole before anything is written,
    each tar member passes members.Guard before it is written (a refused member refuses the
    archive), and all of it goes to a fresh sibling folder that takes `folder`'s place only
    once the tar stream ended where it should. Files belong to the user running this, with
    at most 0o755 of their mode. OSError: local disk trouble (nothing is left behind either).
    """
    check_frames(archive_path)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.restoring-"))
    staging.chmod(0o755)  # as a folder made by mkdir: the compile container may not be root
    try:
        _extract(archive_path, staging)
        _swap(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone already unless something failed


def _extract(archive_path: Path, staging: Path) -> None:
    guard = Guard(staging)
    with archive_path.open("rb") as raw:
        stream = TarStream(zstandard.ZstdDecompressor().stream_reader(
            raw, read_size=_CHUNK, read_across_frames=True))
        try:
            with tarfile.open(fileobj=stream, mode="r|") as tar:  # type: ignore[call-overload]
                while (info := tar.next()) is not None:
                    tar.members.clear()  # tarfile keeps every header; a cache has 100k+
                    member = guard.admit(info)
                    if member is not None:
                        _write(tar, info, member, staging)
                stream.check_end(tar.offset)
        except (tarfile.TarError, zstandard.ZstdError, EOFError) as exc:
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


def _swap(staging: Path, folder: Path) -> None:
    """Put `staging` where `folder` is; the previous folder is deleted only afterwards."""
    aside = folder.with_name(f".{folder.name}.old-{os.getpid()}-{staging.name[-8:]}")
    had = folder.exists()
    if had:
        folder.rename(aside)
    try:
        staging.rename(folder)
    except OSError:
        if had:
            aside.rename(folder)
        raise
    shutil.rmtree(aside, ignore_errors=True)


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
        digest.update(f"{relative}\0{path.lstat().st_size}\n".encode())
    return digest.hexdigest()


def folder_size(folder: Path) -> int:
    return sum(p.lstat().st_size for p in _files(folder))


def _files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [Path(d) / f for d, _, files in os.walk(folder) for f in files]
