"""A compile stopped the way CI stops one (SIGTERM: a cancelled job, a job timeout) loses
nothing it finished: the run unwinds as Ctrl-C does, removes its compile container, saves
the finished units' cache to the bucket and exits 143 in one line; the next run, on a
fresh machine, hits the cache for those units."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from build_graph.docker.containers import OWNER_LABEL, owner
from tests.helpers import REPO, doit_command
from tests.support.gcs import GcsEmulator
from tests.support.registry import Registry
from tests.support.workspace import Workspace, make_workspace

BUCKET = "team-ccache"
KERNELS = 10  # units enough to stop the compile part-way (stopped at 4; about 50 s cold on 2 cores)


def results_in(cache: Path) -> int:
    """Compilations ccache has stored (its result files, '*R')."""
    return sum(1 for p in cache.rglob("*R") if p.is_file()) if cache.is_dir() else 0


@pytest.mark.parametrize(
    "options",
    [(), ("-n", "2")],
    ids=["one-task-at-a-time", "doit-n-2-threads"],
)
def test_sigterm_half_way_saves_the_finished_units_for_the_next_machine(
    tmp_path: Path, registry: Registry, gcs: GcsEmulator, options: tuple[str, ...]
) -> None:
    """Without -n the compile runs in the thread the signal unwinds; with -n 2 in a worker
    thread that never sees it, whose container and cache the run's interrupt cleanups
    remove and save."""
    ws = make_workspace(tmp_path / "first", registry)
    ws.edit('FASTEXT_KERNELS = "2"', f'FASTEXT_KERNELS = "{KERNELS}"')
    prefix = "stopped-threads" if options else "stopped"  # the module's bucket is shared
    ws.edit('max_size = "2G"', f'url = "gs://{BUCKET}/{prefix}"\nmax_size = "2G"')
    env = {**os.environ, "STORAGE_EMULATOR_HOST": gcs.url, "BUILD_GRAPH_VERBOSE": "1"}
    assert ws.doit("build:builder", env=env).returncode == 0
    cache = ws.root / "build" / "ccache"
    with compiling(ws, env, *options) as proc:
        deadline = time.monotonic() + 600
        while results_in(cache) < 4:  # some units done, most not
            assert proc.poll() is None, "the compile ended before it could be stopped"
            assert time.monotonic() < deadline, "no unit compiled in 10 minutes"
            time.sleep(0.2)
        done_then = results_in(cache)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 143, output[-3000:]
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.startswith("terminated")]
    assert lines == [
        "terminated (SIGTERM) during compile of fastext: stopped; "
        "nothing interrupted was recorded as done"
    ], output[-3000:]
    assert done_then < KERNELS, "stopped too late to tell"
    # no container outlives the run (its own: other tests' run beside it)
    assert containers_of(proc.pid) == [], "a container outlived the run"
    saved = [b.name for b in gcs.client().list_blobs(BUCKET, prefix=f"{prefix}/")]
    assert saved, "the finished units' cache was not saved"
    assert not (ws.root / "build" / "default" / "fastext" / "wheels").exists()

    # A fresh machine: the same stack without its build folder, the same bucket.
    fresh = fresh_copy(ws, tmp_path / "second", registry)
    again = fresh.doit("compile:fastext", env={"STORAGE_EMULATOR_HOST": gcs.url})
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    stats = compile_record(fresh)
    assert stats["transfer"]["restored_from"] is not None, stats
    assert stats["stats"]["hits"] >= done_then, (done_then, stats)
    assert stats["stats"]["misses"] > 0, stats  # the rest was compiled now, not before


def test_sigkill_loses_at_most_the_interval_and_the_next_compile_is_estimated(
    tmp_path: Path, registry: Registry, gcs: GcsEmulator
) -> None:
    """SIGKILL (a preempted VM, a runner that dies) runs no handler: what is saved is what
    the interval saves put in the bucket. The next machine hits those units; the one after
    it, holding the history the last whole compile kept in the cache, shows an estimate,
    and its summary says how far off it was."""
    ws = make_workspace(tmp_path / "first", registry)
    ws.edit('FASTEXT_KERNELS = "2"', f'FASTEXT_KERNELS = "{KERNELS}"')
    ws.edit('max_size = "2G"', f'url = "gs://{BUCKET}/killed"\nsave_every = "3s"\nmax_size = "2G"')
    env = {
        **os.environ,
        "STORAGE_EMULATOR_HOST": gcs.url,
        "BUILD_GRAPH_VERBOSE": "1",
        "BUILD_GRAPH_PROGRESS_S": "1",
    }
    assert ws.doit("build:builder", env=env).returncode == 0
    cache = ws.root / "build" / "ccache"
    lines: list[str] = []
    with compiling(ws, env) as proc:
        assert proc.stdout is not None
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
        reader.start()
        deadline = time.monotonic() + 600
        while not (
            results_in(cache) >= 4
            and any("saved" in line and "during the compile" in line for line in lines)
        ):
            assert proc.poll() is None, "the compile ended before it could be killed"
            assert time.monotonic() < deadline, "no interval save in 10 minutes"
            time.sleep(0.2)
        proc.kill()
        proc.wait(timeout=60)
        reader.join(timeout=60)
    try:
        assert proc.returncode == -signal.SIGKILL
        saved = [b.name for b in gcs.client().list_blobs(BUCKET, prefix="killed/")]
        assert saved, "no interval save reached the bucket"
    finally:  # nobody was left to remove the compile's container: the test does
        left = containers_of(proc.pid)
        if left:
            subprocess.run(["docker", "rm", "-f", *left], capture_output=True, check=False)
    assert left, "the killed run's compile container was not labelled as its own"

    # A fresh machine: the same stack without its build folder, the same bucket.
    second = fresh_copy(ws, tmp_path / "second", registry)
    again = second.doit("compile:fastext", env={"STORAGE_EMULATOR_HOST": gcs.url})
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    stats = compile_record(second)
    assert stats["transfer"]["restored_from"] is not None, stats
    assert stats["stats"]["hits"] > 0, stats  # what the interval saves kept
    assert stats["clock"]["estimate_s"] is None, stats  # no whole compile before it

    # A third machine compiles four more units, with the history of the second's compile.
    third = fresh_copy(second, tmp_path / "third", registry)
    third.edit(f'FASTEXT_KERNELS = "{KERNELS}"', f'FASTEXT_KERNELS = "{KERNELS + 4}"')
    last = third.doit(
        "compile:fastext",
        env={"STORAGE_EMULATOR_HOST": gcs.url, "BUILD_GRAPH_PROGRESS_S": "1"},
    )
    assert last.returncode == 0, (last.stdout + last.stderr)[-3000:]
    said = last.stdout + last.stderr
    assert any("elapsed, about" in line and " left (" in line for line in said.splitlines()), said
    clock = compile_record(third)["clock"]
    assert clock["estimate_s"] is not None and clock["off"] is not None, clock
    assert last.summary is not None
    cell = last.summary["fastext"]["compile time"]
    assert cell.startswith("compiled in ") and "; estimated " in cell, cell


def containers_of(pid: int) -> list[str]:
    """The containers the run of process `pid` started, by their owner label."""
    label = f"label={OWNER_LABEL}={owner(pid)}"
    return subprocess.run(
        ["docker", "ps", "-aq", "--filter", label], capture_output=True, text=True, check=True
    ).stdout.split()


def compiling(ws: Workspace, env: dict[str, str], *options: str) -> subprocess.Popen[str]:
    """`doit compile:fastext` started, its output (stderr too) on a pipe."""
    return subprocess.Popen(
        doit_command(ws.manifest, *options, "compile:fastext"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=REPO,
    )


def fresh_copy(ws: Workspace, folder: Path, registry: Registry) -> Workspace:
    """The same stack on another machine: no build folder, the same bucket."""
    fresh = Workspace(folder / "quickstart", registry)
    shutil.copytree(ws.root, fresh.root, ignore=shutil.ignore_patterns("build"))
    return fresh


def compile_record(ws: Workspace) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(
        (ws.root / "build" / "default" / "fastext" / "ccache-stats.json").read_text()
    )
    return record
