"""Hermetic builds on real parts: the quickstart with `[stack] hermetic = true`. Every tier
builds with `--network=none` and its compile runs with no network; the wheels of each
Python lock are fetched from the index before the build, checked, kept in the team's store
and installed from files only. A template step that opens a connection (to a server on the
build host's own loopback, which a networked build reaches) fails the build, naming the
tier and the step, and moves no tag."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import pytest

from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from tests.helpers import REPO
from tests.loopback_http import serving
from tests.support.registry import Registry
from tests.support.workspace import Workspace, make_workspace

pytestmark = pytest.mark.integration
TIERS = ("builder", "fastext", "base", "training", "runner")


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory, registry: Registry) -> Workspace:
    ws = make_workspace(tmp_path_factory.mktemp("hermetic"), registry)
    ws.edit('registry = "', 'hermetic = true\nregistry = "')
    return ws


@pytest.fixture(scope="module")
def machine_cache(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An empty machine cache: the wheels come from the index, so the store gets them."""
    return {"XDG_CACHE_HOME": str(tmp_path_factory.mktemp("xdg"))}


def test_a_hermetic_quickstart_installs_its_locks_from_files_and_is_promoted(
    ws: Workspace, machine_cache: dict[str, str]
) -> None:
    result = ws.doit(env=machine_cache)
    text = result.stdout + result.stderr
    assert result.returncode == 0, text[-5000:]
    for name in TIERS:
        assert "latest" in ws.registry.tags(f"quickstart/{name}"), name
    builds = [line for line in text.splitlines() if "+ docker build" in line]
    assert len(builds) == len(TIERS) and all("--network=none" in b for b in builds), builds
    compiles = [
        line for line in text.splitlines() if "+ docker run" in line and "compile.sh" in line
    ]
    assert compiles and all("--network=none" in c for c in compiles), compiles
    store = ws.root / "build" / "ccache-store" / "inputs" / "sha256"
    locked = 0
    for tier in plan(load(ws.manifest)):
        lock = tier.python.lock
        if lock is None or not lock.pins:
            continue
        wheels = {file: sha256 for pin in lock.pins for file, sha256 in pin.wheels}
        folder = tier.folder.pywheels
        assert {p.name for p in folder.iterdir() if not p.name.startswith(".")} == set(wheels)
        for file, sha256 in wheels.items():
            assert hashlib.sha256((folder / file).read_bytes()).hexdigest() == sha256, file
            assert (store / sha256).is_file(), (tier.key, file)  # the team keeps what it fetched
        assert "--no-index --find-links /tmp/pywheels" in tier.dockerfile, tier.key
        locked += len(wheels)
    assert locked >= 3  # teamlib's and the runner's wheels at least: not a vacuous pass


def fetch(ws: Workspace, env: dict[str, str], *tiers: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "build_graph", "fetch", *tiers, "--manifest", str(ws.manifest)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=REPO,
        timeout=600,
        check=False,
    )


def test_fetch_fills_the_teams_store_with_every_locked_file(
    ws: Workspace, machine_cache: dict[str, str]
) -> None:
    """A store that lost its inputs (a new bucket) is filled again by `fetch`, no build: each
    .deb and wheel under its sha256, from this machine's copies, held to the lock."""
    store = ws.root / "build" / "ccache-store" / "inputs" / "sha256"
    shutil.rmtree(store, ignore_errors=True)  # (absent when this test runs alone)
    done = fetch(ws, machine_cache)
    assert done.returncode == 0, done.stdout + done.stderr
    wanted = {}
    for tier in plan(load(ws.manifest)):
        for locked in (*tier.apt.lock.debs,) if tier.apt.lock is not None else ():
            wanted[locked.sha256] = locked.file
        for pin in tier.python.lock.pins if tier.python.lock is not None else ():
            wanted.update({sha256: file for file, sha256 in pin.wheels})
    assert len(wanted) > 20  # the builder's compilers alone are dozens of .debs
    kept = {p.name for p in store.iterdir()}
    assert kept == set(wanted), sorted(set(wanted) - kept)[:5]
    for sha256 in kept:
        assert hashlib.sha256((store / sha256).read_bytes()).hexdigest() == sha256
    lines = done.stdout.splitlines()
    assert any(line.startswith("builder: ") and " debs, " in line for line in lines), lines
    newly = [int(m[1]) for line in lines if (m := re.search(r"; (\d+) newly kept$", line))]
    assert sum(newly) == len(wanted), lines  # each file counted once, where it was stored
    again = fetch(ws, machine_cache, "builder")
    assert again.returncode == 0 and "; 0 newly kept" in again.stdout, again.stdout + again.stderr


class _Counting(BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Counting.seen.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"reached\n")


def test_a_step_that_opens_a_connection_fails_naming_the_tier_and_the_step(
    ws: Workspace, machine_cache: dict[str, str]
) -> None:
    promoted = ws.registry.digest("quickstart/training", "latest")
    shipped = REPO / "templates" / "training.Dockerfile.j2"
    with serving(_Counting) as address:
        # The team's own copy of the template (the stack's templates/ come first), with a
        # step that downloads from the build host: a networked build reaches this server.
        step = (
            'RUN python3 -c "import urllib.request; '
            f"print(urllib.request.urlopen('http://{address}/fetch', timeout=10).read())\""
        )
        (ws.root / "templates" / shipped.name).write_text(f"{shipped.read_text()}\n{step}\n")
        result = ws.doit(env=machine_cache)
    text = result.stdout + result.stderr
    assert result.returncode != 0, text[-3000:]
    said = [line for line in text.splitlines() if "ran with no network" in line]
    assert said, text[-3000:]
    assert "step `RUN python3 -c" in said[0] and "of training" in said[0], said
    assert "Dockerfile:" in said[0], said  # the line in the rendered Dockerfile
    assert "Connection refused" in text or "unreachable" in text, text[-3000:]
    assert _Counting.seen == []  # nothing left the build's own namespace
    assert ws.registry.digest("quickstart/training", "latest") == promoted  # no tag moved
