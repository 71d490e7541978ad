"""images.lock on real parts: a `from` image pinned by its registry digest; the tag moving
upstream rebuilds nothing until `lock --update`, which rebuilds exactly that tier."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from build_graph.plan.lock import LOCAL, read_lock
from tests.helpers import REPO
from tests.support.registry import Registry
from tests.support.servers import free_port
from tests.support.workspace import Workspace, built, make_workspace

pytestmark = pytest.mark.integration


@pytest.fixture
def ws(tmp_path: Path, registry: Registry) -> Iterator[Workspace]:
    yield make_workspace(tmp_path, registry)


def push_as(source: str, ref: str) -> None:
    client = docker.from_env()
    repo, tag = ref.rsplit(":", 1)
    client.images.get(source).tag(repo, tag)
    for chunk in client.api.push(repo, tag=tag, stream=True, decode=True):
        assert "error" not in chunk, chunk


def test_a_moved_tag_rebuilds_nothing_until_the_lock_is_updated(ws: Workspace) -> None:
    assert ws.doit("push:base").returncode == 0
    images = {t: f"{ws.registry.address}/quickstart/{t}" for t in ("fastext", "base")}
    local = {t: str(docker.from_env().images.list(r)[0].id) for t, r in images.items()}
    upstream = f"{ws.registry.address}/upstream/python:1"
    push_as(local["fastext"], upstream)
    ws.manifest.write_text(
        ws.manifest.read_text()
        + (
            f'\n[tiers.app]\nfrom = "{upstream}"\ntemplate = "training.Dockerfile.j2"\n'
            'context = ["train"]\n'
        )
    )
    first = ws.doit("push:app")
    text = first.stdout + first.stderr
    assert first.returncode == 0, text[-3000:]
    pins = read_lock(ws.root / "images.lock").images
    pinned = ws.registry.digest("upstream/python", "1")
    assert pins[upstream] == pinned and pins["debian:bookworm-slim"] == LOCAL
    assert f"images.lock: {upstream} pinned to {pinned} (recorded)" in text
    dockerfile = (ws.root / "build" / "default" / "app" / "Dockerfile").read_text()
    assert f"FROM {upstream}@{pinned}" in dockerfile

    push_as(local["base"], upstream)  # upstream rebuilt the image under the same tag
    assert ws.registry.digest("upstream/python", "1") != pinned
    again = ws.doit("push:app")
    assert again.returncode == 0 and built(again) == []

    update = subprocess.run(
        [
            sys.executable,
            "-m",
            "build_graph",
            "lock",
            "--update",
            upstream,
            "--manifest",
            str(ws.manifest),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert update.returncode == 0, update.stderr
    assert f"{upstream} pinned to" in update.stdout and f"moved from {pinned}" in update.stdout
    moved = ws.doit("push:app", "push:base")
    assert moved.returncode == 0
    assert built(moved) == ["app"]  # exactly the tier on that image


FETCH = """\\
#!/usr/bin/env bash
{% import "_compile.j2" as c %}
set -euo pipefail
{{ c.fetch_sources(compile, paths) }}
{% for n in compile.sources %}
cp {{ paths.src }}/{{ n }}/VERSION {{ paths.out }}/{{ n }}-version.txt
{% endfor %}
"""


def add_fetching_tier(ws: Workspace, source: str) -> None:
    """Tier `fromgit`: its compile fetches `source` (as `lib`) with the shared git fetch and
    writes lib's VERSION file to its wheels folder."""
    (ws.root / "templates" / "fetch.sh.j2").write_text(FETCH)
    ws.manifest.write_text(
        ws.manifest.read_text()
        + (
            '\n[tiers.fromgit]\nfrom = "debian:{debian}-slim"\n'
            'template = "python-runtime.Dockerfile.j2"\n'
            'compile = { builder = "builder", script = "fetch.sh.j2", '
            f'sources = {{ lib = "{source}" }}, outputs = "*.txt" }}\n'
        )
    )


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A git remote on loopback (git daemon, git://) with branch main; (URL, work tree)."""
    work, served = tmp_path / "work", tmp_path / "served"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    (work / "VERSION").write_text("v1\n")
    git("add", "VERSION", cwd=work)
    git("commit", "-q", "-m", "v1", cwd=work)
    served.mkdir()
    git("clone", "-q", "--bare", str(work), str(served / "lib.git"), cwd=tmp_path)
    git("config", "uploadpack.allowAnySHA1InWant", "true", cwd=served / "lib.git")
    git("remote", "add", "origin", str(served / "lib.git"), cwd=work)
    port = free_port()
    with subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--listen=127.0.0.1",
            f"--port={port}",
            f"--base-path={served}",
            str(served),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as daemon:
        deadline = time.monotonic() + 20
        while (
            subprocess.run(
                ["git", "ls-remote", f"git://127.0.0.1:{port}/lib.git"],
                capture_output=True,
                check=False,
            ).returncode
            != 0
        ):
            assert time.monotonic() < deadline, "git daemon did not start"
            time.sleep(0.2)
        yield f"git://127.0.0.1:{port}/lib.git", work
        daemon.terminate()
        daemon.wait(timeout=20)


def test_a_moved_branch_recompiles_nothing_until_the_lock_is_updated(
    ws: Workspace, remote: tuple[str, Path]
) -> None:
    url, work = remote
    source = f"{url}@main"
    add_fetching_tier(ws, source)
    version = ws.root / "build" / "default" / "fromgit" / "wheels" / "lib-version.txt"
    first = ws.doit("compile:fromgit")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    v1 = git("rev-parse", "HEAD", cwd=work)
    assert read_lock(ws.root / "images.lock").sources == {source: v1}
    assert version.read_text() == "v1\n"

    (work / "VERSION").write_text("v2\n")
    git("commit", "-q", "-am", "v2", cwd=work)
    git("push", "-q", "origin", "main", cwd=work)  # the branch moves upstream
    again = ws.doit("compile:fromgit")
    assert again.returncode == 0 and "-- compile:fromgit" in again.stdout
    assert version.read_text() == "v1\n"

    update = subprocess.run(
        [
            sys.executable,
            "-m",
            "build_graph",
            "lock",
            "--update",
            source,
            "--manifest",
            str(ws.manifest),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert update.returncode == 0, update.stderr
    assert f"moved from {v1}" in update.stdout
    moved = ws.doit("compile:fromgit")
    assert moved.returncode == 0 and version.read_text() == "v2\n"
    # The shared fetch (templates/_compile.j2) kept each pinned commit in the source cache.
    v2 = git("rev-parse", "HEAD", cwd=work)
    cached = ws.root / "build" / "sources"
    assert {p.name for p in cached.iterdir()} == {f"git-{v1}", f"git-{v2}"}
    assert "compile: lib at " + v2 in moved.stdout + moved.stderr


def test_a_pinned_commit_compiles_again_from_the_source_cache_without_the_remote(
    ws: Workspace, tmp_path: Path
) -> None:
    """A fresh compile of a commit the source cache holds needs no network: the remote is
    gone (a URL nothing listens on) and the wheels are wiped; the compile still runs."""
    commit = "1" * 40
    source = f"git://127.0.0.1:{free_port()}/gone.git@main"
    (ws.root / "images.lock").write_text(f'[sources]\n"{source}" = "{commit}"\n')
    held = ws.root / "build" / "sources" / f"git-{commit}"
    held.mkdir(parents=True)
    (held / "VERSION").write_text("cached\n")
    add_fetching_tier(ws, source)
    result = ws.doit("compile:fromgit")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    version = ws.root / "build" / "default" / "fromgit" / "wheels" / "lib-version.txt"
    assert version.read_text() == "cached\n"
