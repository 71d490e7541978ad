"""What a compile took, kept for the next one's estimate (stages/compile_clock.py): its time,
its compilations and each unit's time from the .ninja_log files its sources' build folders
hold. The container wrote those folders, so a log there may be a link, a FIFO or huge:
reading one never blocks, follows a link or fails the compile.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from build_graph.ccache.archive import HISTORY
from build_graph.ccache.stats import CcacheStats
from build_graph.docker import files
from build_graph.log import log
from build_graph.plan.plan import PlannedTier
from build_graph.stages.compile_clock import History, read_ninja_log


def keep_history(tier: PlannedTier, cache: Path, stats: CcacheStats | None, took: float) -> None:
    """What this compile took, for the next one's estimate, kept in the cache folder so it
    travels with the archive to the next machine: its time, its compilations and, where
    ninja drove it, each unit's time from the .ninja_log files the sources' build folders
    hold (found here only where the sources are this machine's: bind mode)."""
    try:
        weights: dict[str, float] = {}
        if files.mode() == "bind":
            for found in ninja_logs(tier.folder.staged_sources):
                weights.update(read_ninja_log(read_log_safely(found)))
        units = stats.hits + stats.misses if stats is not None else 0
        History(compile_s=took, units=units, weights=weights).save(cache / HISTORY)
    except Exception as exc:  # only the next estimate is poorer for it, never the compile
        log(f"[{tier.key}] compile times not kept: {type(exc).__name__}: {exc}")


def read_log_safely(path: Path, limit: int = 64 << 20) -> str:
    """A .ninja_log the compile wrote (the container writes the sources folder, so it may
    be anything): a regular file, not through a link, at most `limit` bytes."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return handle.read(limit).decode("utf-8", "replace")


def ninja_logs(folder: Path, depth: int = 4) -> list[Path]:
    """The .ninja_log files at most `depth` folders below `folder` (a CMake build folder is
    a level or two under a source tree; PyTorch's is pytorch/build/), without walking a
    whole source tree of a hundred thousand files."""
    found: list[Path] = []
    for root, dirs, names in os.walk(folder):
        level = len(Path(root).relative_to(folder).parts)
        if ".ninja_log" in names:
            found.append(Path(root) / ".ninja_log")
        dirs[:] = [] if level >= depth else [d for d in dirs if not d.startswith(".git")]
    return sorted(found)
