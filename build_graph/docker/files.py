"""A container's files from this host: bind mounts, or copies through the Docker API.

A bind mount names a path of the daemon's host. That is this host only when the daemon runs
here (DOCKER_HOST unset or unix://); a daemon behind tcp://, ssh:// or npipe:// would mount
its own paths (missing, or worse, other files). There the files travel through the API
instead: each mount's files go into the created container before it starts (read-only ones
too), and a mount that is an output is brought back after the container stopped, through
the untar door (members checked, at most `Mount.back_limit` bytes, into a fresh sibling
folder swapped in only when complete: the host folder is the old one or the new one, never
half, so a failed or interrupted copy never loses a compiler cache).

BUILD_GRAPH_DOCKER_FILES=bind|copy overrides the choice (copy: a local daemon that should
not see this host's paths; bind: a remote daemon that shares them, e.g. over NFS).
"""

from __future__ import annotations

import os
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from build_graph.docker.connection import endpoint, short_error
from build_graph.errors import BuildFailed, EnvironmentProblem
from build_graph.log import log
from build_graph.untar import ArchiveError, replace_folder_from

if TYPE_CHECKING:
    from docker.models.containers import Container

Mode = Literal["bind", "copy"]
SETTING = "BUILD_GRAPH_DOCKER_FILES"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Mount:
    """`host` (a file or folder here) at `container` inside the container.

    back_limit: an output, brought back over `host` after the run in copy mode (at most
    that many bytes); None: an input only. only: in copy mode, send just the files of these
    names (and their folders); empty: everything.
    """

    host: str
    container: str
    read_only: bool = False
    back_limit: int | None = None
    only: tuple[str, ...] = ()


def mode_for(host: str, setting: str) -> Mode:
    """Bind mounts where the daemon shares this host's filesystem, copies elsewhere."""
    match setting.strip().lower():
        case "bind" | "copy" as chosen:
            return "bind" if chosen == "bind" else "copy"
        case "" | "auto":
            return "bind" if host.startswith("unix://") else "copy"
        case _:
            raise EnvironmentProblem(
                f"{SETTING}={setting}: not a choice; `bind` (the daemon "
                "sees this host's files), `copy` (files travel through "
                "the Docker API) or unset (chosen from DOCKER_HOST)"
            )


def mode() -> Mode:
    return mode_for(endpoint(), os.environ.get(SETTING, ""))


def send(box: Container, mounts: tuple[Mount, ...]) -> int:
    """Copy mode: put every mount's files into the created container; returns the bytes sent.
    A folder goes as GNU tar streams it (fast for 100k cache files); files, folder skeletons
    and `only` selections in one small archive first."""
    import docker.errors

    sent = 0
    try:
        with tempfile.TemporaryFile() as small:
            with tarfile.open(fileobj=small, mode="w", dereference=True) as tar:
                for mount in mounts:
                    _add_small(tar, mount)
            sent += small.tell()
            small.seek(0)
            box.put_archive("/", small)
        for mount in mounts:
            if Path(mount.host).is_dir() and not mount.only:  # else sent whole above
                sent += _send_folder(box, mount)
    except (docker.errors.DockerException, OSError) as exc:
        raise BuildFailed(f"could not copy files into the container: {short_error(exc)}") from None
    return sent


def _add_small(tar: tarfile.TarFile, mount: Mount) -> None:
    name = str(PurePosixPath(mount.container).relative_to("/"))
    host = Path(mount.host)
    if not host.exists():  # as a bind mount makes it: an empty folder
        tar.addfile(_folder(name))
        return
    if not host.is_dir():
        tar.add(host, arcname=name)
        return
    tar.add(host, arcname=name, recursive=False)  # the folder itself; its files below
    if not mount.only:
        return
    for folder, _, files in os.walk(host):
        inner = Path(folder).relative_to(host)
        if inner.parts:
            tar.add(folder, arcname=f"{name}/{inner.as_posix()}", recursive=False)
        for file in sorted(set(files) & set(mount.only)):
            tar.add(Path(folder) / file, arcname=f"{name}/{(inner / file).as_posix()}")


def _folder(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
    return info


def _send_folder(box: Container, mount: Mount) -> int:
    counted = [0]

    def chunks() -> Iterator[bytes]:
        tar = subprocess.Popen(
            ["tar", "-C", mount.host, "-cf", "-", "."],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert tar.stdout is not None
        finished = False
        try:
            while data := tar.stdout.read(_CHUNK):
                counted[0] += len(data)
                yield data
            finished = True
        finally:  # also when the daemon stopped reading: no tar left behind
            if not finished:
                tar.kill()
            _, errors = tar.communicate()
        if tar.returncode != 0:
            raise OSError(f"tar could not read {mount.host}: {errors.decode()[-300:]}")

    box.put_archive(mount.container, chunks())
    return counted[0]


def bring_back(box: Container, mount: Mount) -> int:
    """Copy mode: replace `mount.host` with the stopped container's `mount.container`;
    returns the bytes read. BuildFailed (unreadable, refused member, over the limit) leaves
    `mount.host` as it was."""
    import docker.errors

    assert mount.back_limit is not None
    try:
        stream, _ = box.get_archive(f"{mount.container.rstrip('/')}/.", chunk_size=_CHUNK)
        reader = ChunkReader(iter(stream))
        replace_folder_from(reader, Path(mount.host), mount.back_limit)
    except (docker.errors.DockerException, ArchiveError, OSError) as exc:
        raise BuildFailed(
            f"could not copy {mount.container} back from the container to "
            f"{mount.host}: {short_error(exc)}"
        ) from None
    log(f"  copied back {mount.container} -> {mount.host} ({reader.total / 2**20:.1f} MiB)")
    return reader.total


class ChunkReader:
    """docker-py's chunk iterator as a file for tarfile (which reads 512 bytes at a time)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks, self._piece, self._at, self.total = chunks, b"", 0, 0

    def read(self, size: int = -1, /) -> bytes:
        out = bytearray()
        while size < 0 or len(out) < size:
            if self._at >= len(self._piece):
                piece = next(self._chunks, None)
                if piece is None:
                    break
                self._piece, self._at = piece, 0
                continue
            left = len(self._piece) - self._at
            take = left if size < 0 else min(size - len(out), left)
            out += self._piece[self._at : self._at + take]
            self._at += take
        self.total += len(out)
        return bytes(out)
