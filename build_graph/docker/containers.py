"""Containers through docker-py: started, followed, exec'd into, and always removed.

With daemon.py (images and the daemon itself), the only code that talks to Docker. A
container's files come from this host by bind mounts, or, when the daemon is elsewhere,
through the API (files.py chooses and copies).
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

from build_graph.docker import files
from build_graph.docker.connection import client, short_error
from build_graph.docker.files import Mount as Mount
from build_graph.errors import BuildFailed
from build_graph.interrupts import on_interrupt, stopping
from build_graph.layout import LABEL_PREFIX
from build_graph.log import log

# Who started a container: a run killed where nothing could remove it (SIGKILL) leaves it
# behind, and this says whose it was (`docker ps --filter label=io.build-graph.owner=...`).
OWNER_LABEL = f"{LABEL_PREFIX}.owner"
READ_LIMIT = 64 << 20  # read_file: the probe's report and the like, never this large

if TYPE_CHECKING:
    from docker.models.containers import Container


def owner(pid: int | None = None) -> str:
    """'host:pid' of this process (or `pid`), the owner label's value."""
    return f"{socket.gethostname()}:{pid if pid is not None else os.getpid()}"


@contextmanager
def container(
    image: str,
    command: list[str],
    *,
    mounts: tuple[Mount, ...] = (),
    env: Mapping[str, str] | None = None,
    entrypoint: list[str] | None = None,
    gpus: bool = False,
    platform: str | None = None,
    network: str = "host",
) -> Iterator[Container]:
    """A started container (host network; `network` "none": none, loopback included) that
    is always removed afterwards. In copy mode
    (files.py) the mounts' files are put into it before it starts; `bring_back` then
    fetches the outputs once it stopped. `platform`: the image's, where it is not the
    host's (an arm64 image on an x86 host runs under the kernel's binfmt emulation)."""
    import docker.errors
    from docker.types import DeviceRequest

    device_requests = [DeviceRequest(count=-1, capabilities=[["gpu"]])] if gpus else None
    copy = files.mode() == "copy"
    volumes = (
        {}
        if copy
        else {m.host: {"bind": m.container, "mode": "ro" if m.read_only else "rw"} for m in mounts}
    )
    shown = f" --platform={platform}" if platform else ""
    log(f"+ docker run --network={network}{shown} {image} {' '.join(command)}")

    def create() -> Container:
        return client().containers.create(
            image,
            command,
            network_mode=network,
            volumes=volumes,
            environment=dict(env or {}),
            entrypoint=entrypoint,
            device_requests=device_requests,
            platform=platform,
            labels={OWNER_LABEL: owner()},
        )

    try:
        try:
            box = create()
        except docker.errors.ImageNotFound:  # as `docker run` does: pull, then create
            from build_graph.docker import daemon

            daemon.pull(image, platform)
            box = create()
    except docker.errors.APIError as exc:
        raise BuildFailed(f"could not start {image}: {short_error(exc)}") from None
    with _live_lock:  # the interrupt's cleanup takes this lock: no box slips past it
        if stopping():
            with suppress(docker.errors.DockerException):
                box.remove(force=True)
            raise KeyboardInterrupt
        _live.add(box)
    try:
        if copy and mounts:
            sent = files.send(box, mounts)
            log(f"  copied {len(mounts)} mount(s) into the container ({sent / 2**20:.1f} MiB)")
        try:
            box.start()
        except docker.errors.APIError as exc:
            raise BuildFailed(f"could not start {image}: {short_error(exc)}") from None
        yield box
    finally:
        with suppress(docker.errors.DockerException):
            box.remove(force=True)
        with _live_lock:
            _live.discard(box)


_live: set[Container] = set()  # started here and not yet removed, in any thread
_live_lock = threading.Lock()


def _remove_live() -> None:
    """On an interrupt: remove the containers other threads still hold (doit -n)."""
    import docker.errors

    with _live_lock:
        boxes = list(_live)
    for box in boxes:
        with suppress(docker.errors.DockerException):
            box.remove(force=True)


on_interrupt(_remove_live)


def bring_back(box: Container, mount: Mount) -> int | None:
    """After the container stopped: in copy mode, replace the output `mount.host` with what
    the container holds at `mount.container` (the bytes read); in bind mode it is there
    already (None). BuildFailed leaves `mount.host` as it was."""
    return files.bring_back(box, mount) if files.mode() == "copy" else None


def exec_in(box: Container, command: list[str], env: Mapping[str, str]) -> tuple[int, str]:
    """Run `command` inside a running container; (exit code, output). Errors read as -1."""
    import docker.errors

    try:
        code, output = box.exec_run(command, environment=dict(env))
    except docker.errors.DockerException as exc:
        return -1, short_error(exc)
    data = output if isinstance(output, bytes) else b"".join(output)
    return int(code or 0), data.decode("utf-8", "replace")


def run_to_end(box: Container, on_line: Callable[[str], None] | None = None) -> tuple[int, str]:
    """Follow a container's output until it exits; (exit code, combined output)."""
    lines: list[str] = []
    buffer = b""
    for piece in box.logs(stream=True, follow=True):
        buffer += piece
        *complete, buffer = buffer.split(b"\n")
        for raw in complete:
            text = raw.decode("utf-8", "replace")
            lines.append(text)
            if on_line:
                on_line(text)
    if buffer:
        lines.append(buffer.decode("utf-8", "replace"))
    status = box.wait()
    return int(status.get("StatusCode", 1)), "\n".join(lines)


def read_file(box: Container, path: str) -> bytes | None:
    """A file from a (stopped) container's filesystem; None where it is not there.
    Unlike its logs, which docker 20.10 can return before the last lines are written,
    a file the process wrote before it exited is complete."""
    import io
    import tarfile

    import docker.errors

    try:
        chunks, _ = box.get_archive(path)
        data = bytearray()
        for chunk in chunks:  # a container's file is untrusted: bounded, like any answer
            data += chunk
            if len(data) > READ_LIMIT:
                raise BuildFailed(
                    f"{path} in the container is larger than {READ_LIMIT >> 20} MiB; refused"
                )
        with tarfile.open(fileobj=io.BytesIO(bytes(data))) as tar:
            member = tar.next()
            handle = tar.extractfile(member) if member else None
            return handle.read() if handle else None
    except (docker.errors.DockerException, tarfile.TarError):
        return None
