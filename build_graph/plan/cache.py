"""Reuse the last plan when none of its inputs changed, so a no-op `doit` stays fast.

The plan is a pure function of the manifest, the template folders, the context files, the
local compile sources and this package's code. Their (path, mtime, size) are recorded with
the pickled plan in build/; if every one still matches, the plan is loaded without importing
pydantic or Jinja or reading a context file (doit's own file_dep check works the same way).
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

from build_graph import __version__
from build_graph.fs import write_bytes_if_changed
from build_graph.manifest.model import Stack
from build_graph.plan.plan import PlannedTier

CACHE_NAME = ".plan-cache.pickle"
PACKAGE = Path(__file__).resolve().parents[1]  # all of build_graph/
FileStat = tuple[str, int, int]


def load_plan(manifest: Path) -> tuple[Stack, list[PlannedTier]]:
    """(stack, plan) for `manifest`, from the cache when its inputs are unchanged.

    Raises ConfigError/TemplateError like config.load and plan.plan.
    """
    manifest = manifest.resolve()
    cache = manifest.parent / "build" / CACHE_NAME
    cached = _read(cache)
    if cached is not None:
        return cached
    from build_graph.manifest.load import load
    from build_graph.plan.plan import plan

    stack = load(manifest)
    planned = plan(stack)
    inputs = [manifest, *_tree(stack.template_dirs), *_tree((PACKAGE,))]
    inputs += [path for tier in planned for _, path in tier.context_files]
    inputs += [stack.root / src for tier in planned if tier.spec.compile
               for _, src in tier.spec.compile.sources if "://" not in src]
    payload = {"tool": __version__, "inputs": _stats(inputs), "plan": (stack, planned)}
    write_bytes_if_changed(cache, pickle.dumps(payload))
    return stack, planned


def _read(cache: Path) -> tuple[Stack, list[PlannedTier]] | None:
    try:
        payload = pickle.loads(cache.read_bytes())
    except Exception:  # missing, truncated or from another version: plan afresh
        return None
    if payload.get("tool") != __version__:
        return None
    paths = [Path(p) for p, _, _ in payload["inputs"]]
    if _stats(paths) != payload["inputs"]:
        return None
    stack, planned = payload["plan"]
    return stack, planned


def _tree(folders: tuple[Path, ...]) -> list[Path]:
    return [Path(d) / f for folder in folders if folder.is_dir()
            for d, _, files in os.walk(folder) for f in files if not f.endswith(".pyc")]


def _stats(paths: list[Path]) -> list[FileStat]:
    """(path, mtime_ns, size) of each file; a folder contributes every file below it."""
    stats: list[FileStat] = []
    for path in paths:
        for file in _tree((path,)) if path.is_dir() else [path]:
            try:
                info = file.stat()
            except OSError:
                stats.append((str(file), -1, -1))
                continue
            stats.append((str(file), info.st_mtime_ns, info.st_size))
    return stats
