"""The tar stream sent to `docker build`: the rendered Dockerfile, context files, wheels."""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path
from typing import IO

from build_graph.plan.paths import WHEELS_DIR
from build_graph.plan.plan import PlannedTier
from build_graph.plan.render import dockerquote


def _add(archive: tarfile.TarFile, name: str, data: bytes, executable: bool = False) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o755 if executable else 0o644
    info.mtime = 0  # deterministic: identical inputs give an identical context
    archive.addfile(info, io.BytesIO(data))


def label_instruction(labels: dict[str, str]) -> str:
    """One LABEL instruction for all labels (docker-py's `labels=` adds a step per label)."""
    pairs = " ".join(f"{dockerquote(k)}={dockerquote(v)}" for k, v in sorted(labels.items()))
    return f"LABEL {pairs}\n"


def context_tar(tier: PlannedTier, labels: dict[str, str]) -> IO[bytes]:
    """A seekable tar (spooled to disk past 64 MiB) positioned at its start.

    The labels are appended to the Dockerfile sent to the daemon, not to the rendered file
    that is hashed: they describe the build (time, revision), not the image's inputs.
    """
    spool = tempfile.SpooledTemporaryFile(max_size=64 << 20)  # noqa: SIM115 (returned)
    dockerfile = tier.dockerfile.rstrip("\n") + "\n" + label_instruction(labels)
    with tarfile.open(fileobj=spool, mode="w") as archive:
        _add(archive, "Dockerfile", dockerfile.encode("utf-8"))
        for name, path in tier.context_files:
            _add(archive, name, path.read_bytes(), _executable(path))
        if tier.spec.compile is not None:
            for wheel in sorted(tier.wheels_dir.glob("*")):
                if wheel.is_file() and not wheel.name.startswith("."):
                    _add(archive, f"{WHEELS_DIR}/{wheel.name}", wheel.read_bytes())
    spool.seek(0)
    return spool


def _executable(path: Path) -> bool:
    return bool(path.stat().st_mode & 0o111)
