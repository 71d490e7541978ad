"""Reuse the last plan when none of its inputs changed, so a no-op `doit` stays fast.

The plan is a pure function of the manifest, the template folders, the context entries,
the local compile sources and this package's code. The (path, mtime, size, mode) of every
file *and every folder* below them are recorded with the pickled plan in the build folder
(layout.py; mode: the hash reads a file's executable bit, and chmod changes no mtime); a
folder's mtime changes when an entry is added, removed or renamed in it, so a new file in a
context folder, a new source file or a new template override is noticed, not only edits of
files the last plan knew. A template folder that does not exist yet is recorded as missing,
so creating it is noticed too. If every stat still matches, the plan is loaded without
importing pydantic, Jinja or packaging (whether a Python lock answers its tier was decided
when planning: pylock/state.py) or reading a context file (doit's own file_dep check works
the same way).

One cache per manifest file (each manifest has its own build folder, layout.py), holding its
resolved path: two manifests in one folder (`doit manifest=images-other.toml`) each get
their own plan. The tool's own
files (plan/context.py's tool_owned) are not inputs, as they are not a context's files:
this cache itself lives in build/.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

from build_graph import __version__
from build_graph.aptlock.files import lock_dir as apt_dir
from build_graph.fs import write_bytes_if_changed
from build_graph.layout import BuildFolder
from build_graph.manifest.model import Stack
from build_graph.plan.context import tool_owned
from build_graph.plan.lock import lock_path
from build_graph.plan.plan import PlannedTier
from build_graph.pylock.files import lock_dir

PACKAGE = Path(__file__).resolve().parents[1]  # all of build_graph/
FileStat = tuple[str, int, int, int]


def cache_path(manifest: Path) -> Path:
    """Where the plan of `manifest` (resolved) is cached."""
    return BuildFolder.of(manifest).plan_cache


def load_plan(manifest: Path) -> tuple[Stack, list[PlannedTier]]:
    """(stack, plan) for `manifest`, from the cache when its inputs are unchanged.

    Raises ConfigError/TemplateError like manifest.load.load and plan.plan.plan.
    """
    manifest = manifest.resolve()
    cache = cache_path(manifest)
    cached = _read(cache, manifest)
    if cached is not None:
        return cached
    from build_graph.manifest.load import load
    from build_graph.plan.plan import plan

    stack = load(manifest)
    planned = plan(stack)
    # The locks are inputs: a run that records a Python or apt lock plans again with it
    # (and a lock moved by hand or by git changes the hash tags it covers).
    inputs = [manifest, lock_path(manifest), lock_dir(manifest), apt_dir(manifest)]
    inputs += [*stack.template_dirs, PACKAGE]
    inputs += [stack.root / entry for tier in planned for entry in tier.spec.context]
    inputs += [
        stack.root / src.location
        for tier in planned
        if tier.spec.compile
        for src in tier.spec.compile.sources
        if src.kind == "local"
    ]
    roots = [str(p) for p in dict.fromkeys(inputs)]
    payload = {
        "tool": __version__,
        "manifest": str(manifest),
        "roots": roots,
        "inputs": _stats(inputs, manifest.parent),
        "plan": (stack, planned),
    }
    write_bytes_if_changed(cache, pickle.dumps(payload))
    return stack, planned


def _read(cache: Path, manifest: Path) -> tuple[Stack, list[PlannedTier]] | None:
    try:
        payload = pickle.loads(cache.read_bytes())
    except Exception:  # missing, truncated or from another version: plan afresh
        return None
    if payload.get("tool") != __version__ or payload.get("manifest") != str(manifest):
        return None
    # The roots as given (folders expand to their trees again: what was added is seen).
    roots = [Path(p) for p in payload.get("roots", ())]
    if _stats(roots, manifest.parent) != payload.get("inputs"):
        return None
    stack, planned = payload["plan"]
    return stack, planned


def _tree(folder: Path, root: Path) -> list[Path]:
    """The folder, every folder below it and every file in them (bytecode and the tool's
    own files below `root`, the manifest's folder, aside)."""

    def kept(path: Path) -> bool:
        return not (path.is_relative_to(root) and tool_owned(path.relative_to(root).as_posix()))

    found = []
    for current, dirs, files in os.walk(folder):
        here = Path(current)
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and kept(here / d))
        found.append(here)
        found.extend(here / f for f in sorted(files) if not f.endswith(".pyc") and kept(here / f))
    return found


def _stats(paths: list[Path], root: Path) -> list[FileStat]:
    """(path, mtime_ns, size, mode) of each path; a folder contributes itself and all below
    it; a missing path is recorded as (path, -1, -1, -1), so its appearance is a change."""
    stats: list[FileStat] = []
    for path in dict.fromkeys(paths):
        for item in _tree(path, root) if path.is_dir() else [path]:
            try:
                info = item.stat()
            except OSError:
                stats.append((str(item), -1, -1, -1))
                continue
            stats.append((str(item), info.st_mtime_ns, info.st_size, info.st_mode))
    return stats
