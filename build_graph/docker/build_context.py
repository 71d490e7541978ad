"""The tar stream sent to `docker build`: a Dockerfile, context files, wheels (plain values).

Also the Dockerfile the classic builder gets (`without_mounts`): it knows no RUN --mount.
"""

from __future__ import annotations

import io
import re
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

# RUN options the classic builder does not know: mounts, and --network (a locked apt step)
_MOUNTS = re.compile(r"^RUN\s+(?:--(?:mount|network)=\S+\s+)+")
_CACHE_TARGET = re.compile(r"--mount=type=cache,(?:[^\s,]+,)*?target=([^\s,]+)")
# a bind mount of the build context (no from=): `--mount=type=bind,source=S,target=T`
_BIND = re.compile(r"--mount=type=bind,source=([^\s,]+),target=([^\s,]+)(?=\s)")


def _add_streamed(archive: tarfile.TarFile, name: str, path: Path) -> None:
    """A file of the tool's own (a wheel, a .deb: up to GBs), read as it is written."""
    info = tarfile.TarInfo(name)
    info.size = path.stat().st_size
    info.mode = 0o644
    info.mtime = 0
    with path.open("rb") as handle:
        archive.addfile(info, handle)


def _add(archive: tarfile.TarFile, name: str, data: bytes, executable: bool = False) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o755 if executable else 0o644
    info.mtime = 0  # deterministic: identical inputs give an identical context
    archive.addfile(info, io.BytesIO(data))


def without_mounts(dockerfile: str) -> str:
    """The Dockerfile for the classic builder, which knows no RUN --mount.

    Each RUN loses its --mount options (the step runs without the cache or secret), and a
    shell-form RUN that had cache mounts ends by emptying those folders, so what BuildKit
    keeps in a cache never lands in a layer here either. A bind mount of a context folder
    (the runtime template's wheels) becomes a COPY before the step and a removal in it.
    """
    out = []
    for instruction in _instructions(dockerfile):
        match = _MOUNTS.match(instruction)
        if not match:
            out.append(instruction)
            continue
        targets = [m[1] for m in _CACHE_TARGET.finditer(match[0])]
        binds = [(m[1], m[2]) for m in _BIND.finditer(match[0])]
        command = instruction[match.end() :]
        cleanup = " ".join(
            [f"{t.rstrip('/')}/*" for t in targets] + [target for _, target in binds]
        )
        # A context folder bind-mounted for one step: copied in before it, removed in it
        # (the layer the COPY makes still ships it: the classic builder's price).
        out += [f"COPY {source.rstrip('/')}/ {target.rstrip('/')}/" for source, target in binds]
        if cleanup and not command.lstrip().startswith("["):
            command = f"{command.rstrip()} \\\n && rm -rf {cleanup}"
        out.append(f"RUN {command}")
    return "\n".join(out) + "\n"


def _instructions(dockerfile: str) -> list[str]:
    """Lines joined where a trailing backslash continues an instruction."""
    joined: list[str] = []
    pending = ""
    for line in dockerfile.splitlines():
        pending += line + "\n" if line.endswith("\\") else line
        if not line.endswith("\\"):
            joined.append(pending)
            pending = ""
    if pending:
        joined.append(pending.rstrip("\n"))
    return joined


def context_tar(
    dockerfile: str,
    files: Sequence[tuple[str, Path]],
    folders: Mapping[str, Path | None],
    classic: bool = False,
) -> IO[bytes]:
    """A seekable tar (spooled to disk past 64 MiB) positioned at its start: `dockerfile`,
    each (name, file) of `files`, and the files of each folder of `folders` under its name
    (a compile's wheels, the .debs and wheels a lock names). With `classic`, the Dockerfile
    loses its RUN --mount options (without_mounts)."""
    spool = tempfile.SpooledTemporaryFile(max_size=64 << 20)  # noqa: SIM115 (returned)
    text = without_mounts(dockerfile) if classic else dockerfile
    with tarfile.open(fileobj=spool, mode="w") as archive:
        _add(archive, "Dockerfile", text.encode("utf-8"))
        for name, path in files:
            _add(archive, name, path.read_bytes(), _executable(path))
        for name, folder in sorted(folders.items()):
            for path in sorted(folder.glob("*")) if folder is not None else ():
                if path.is_file() and not path.name.startswith("."):
                    _add_streamed(archive, f"{name}/{path.name}", path)
    spool.seek(0)
    return spool


def _executable(path: Path) -> bool:
    return bool(path.stat().st_mode & 0o111)
