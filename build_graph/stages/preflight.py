"""Pre-flight: what a run's later stages will need, asked in seconds before its first
compile or build, so that hours of compiling never end in a failure that was there all
along (a token without push scope, a cache bucket the credentials cannot write, a
Dockerfile BuildKit refuses, a full disk).

Asked once per run, by whichever compile or build acts first, for every planned image the
registry does not hold yet (what the run will build and push):
- push rights on each repository (registry/upload.py's may_push: an upload session opened
  and cancelled; only a 401/403 fails, an unreachable registry is a warning);
- the compiler cache's store, when a compile is still to run: read and written (a marker);
  a failure fails the run with `[cache] required = true`, else it is a warning and the
  summary's cache cell says why the compile ran cold;
- each Dockerfile through BuildKit's own checks (stages/dockerfile_checks.py; a pass is
  remembered on this machine);
- free disk where the compiler cache and the daemon's data live.
Every failure is one line naming the fix; all of them are said together (exit 3), before
anything is built.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

from build_graph.ccache.store import open_store, store_problem
from build_graph.docker import files
from build_graph.docker.connection import daemon_info
from build_graph.errors import BuildGraphError, EnvironmentProblem, RegistryError
from build_graph.log import log, progress
from build_graph.oci.refs import Presence, parse_ref
from build_graph.plan.plan import PlannedTier
from build_graph.registry import upload
from build_graph.stages import dockerfile_checks
from build_graph.stages.wheels import wheels_current
from build_graph.stages.work import Work

GIB = 1 << 30
FLOOR = 1 * GIB  # less free than this fails: no compile or image build fits
ESCAPE = "BUILD_GRAPH_PREFLIGHT"  # "warn": problems are printed and the run goes on
_lock = threading.Lock()
_found: dict[int, list[str]] = {}  # run (its registry answers' identity) -> its problems


def before_long_work(work: Work) -> None:
    """Check the run once (the first compile or build of it calls this; under doit -n the
    others wait for it); raises EnvironmentProblem listing every failure, one line each,
    in every task that calls it: none of them builds on a pre-flight that failed."""
    with _lock:  # held while checking: a second thread's task waits for the answer
        problems = _found.get(id(work.holdings))
        if problems is None:
            problems = _found[id(work.holdings)] = _check(work)
    if not problems:
        return
    if os.environ.get(ESCAPE) == "warn":
        for problem in problems:
            progress(f"warning: pre-flight ({ESCAPE}=warn): {problem}")
        return
    raise EnvironmentProblem(
        "pre-flight: this run would fail later, so nothing was built:\n"
        + "\n".join(f"  {problem}" for problem in problems)
        + f"\n  (where a check is wrong, {ESCAPE}=warn runs on regardless)"
    )


def _check(work: Work) -> list[str]:
    pending = [image for image in work.by_key.values() if _pending(work, image)]
    if not pending:
        return []
    compiles = [i for i in pending if i.builder_key is not None and not wheels_current(i)]
    problems = [
        *_push_rights(pending),
        *_cache_store(work, compiles),
        *dockerfile_checks.failures(pending),
        *_disk(work, compiles),
    ]
    if not problems:
        log(f"pre-flight: {len(pending)} images to build: push rights, store, checks, disk ok")
    return problems


def _pending(work: Work, image: PlannedTier) -> bool:
    """The run will build and push `image`: the registry does not hold it (or could not
    say: then it is asked as if not)."""
    return work.holdings.registry(image.image).presence is not Presence.PRESENT


def _push_rights(pending: list[PlannedTier]) -> list[str]:
    said: list[str] = []
    for image in pending:
        try:
            upload.may_push(parse_ref(image.image))  # once per repository and run
        except RegistryError as exc:
            line = f"{image.key}: {exc}"
            if line not in said:
                said.append(line)
    return said


def _cache_store(work: Work, compiles: list[PlannedTier]) -> list[str]:
    if not compiles:
        return []
    stack = work.stack
    # Written only where the cache is required: a run of a stack that is not leaves the
    # store as it found it until it has a cache to save (which then says if it cannot).
    problem = store_problem(
        open_store(stack.cache.url), stack.name, stack.build_folder.root, stack.cache.required
    )
    if problem is None:
        return []
    names = ", ".join(i.key for i in compiles)
    if stack.cache.required:
        return [
            f"compiler cache of {names}: {problem}; [cache] required = true: fix the "
            "store's credentials or permissions (or set required = false to compile cold)"
        ]
    progress(f"warning: compiler cache of {names}: {problem}; compiling without it")
    return []


def _disk(work: Work, compiles: list[PlannedTier]) -> list[str]:
    said: list[str] = []
    stack = work.stack
    folder = stack.build_folder.root
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free
    need = stack.cache.max_size_bytes if compiles else 0
    if free < FLOOR:
        said.append(
            f"{folder} has {free / GIB:.1f} GiB free: free some space (docker system prune, "
            "old build folders) before building"
        )
    elif free < need:
        progress(
            f"warning: {folder} has {free / GIB:.1f} GiB free; the compiler cache may grow "
            f"to {need / GIB:.1f} GiB ([cache] max_size) and its save packs a copy: free "
            "space or lower max_size"
        )
    if files.mode() == "bind":  # the daemon is this machine's: its data root is here too
        said.extend(_daemon_disk())
    return said


def _daemon_disk() -> list[str]:
    try:
        said = daemon_info().root_dir
        if not said:
            return []  # the daemon does not say where its data lives: not checked
        root = Path(said)
        free = shutil.disk_usage(root).free
    except (BuildGraphError, OSError):
        return []  # not readable from here (another mount namespace): not checked
    if free < FLOOR:
        return [
            f"the Docker daemon's data root {root} has {free / GIB:.1f} GiB free: free "
            "some space (docker system prune, docker builder prune) before building"
        ]
    return []
