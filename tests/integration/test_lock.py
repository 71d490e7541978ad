"""images.lock on real parts: a `from` image pinned by its registry digest; the tag moving
upstream rebuilds nothing until `lock --update`, which rebuilds exactly that tier."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from build_graph.plan.lock import LOCAL, read_lock
from tests.helpers import REPO
from tests.integration.conftest import Registry, Workspace, built, make_workspace

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
    ws.manifest.write_text(ws.manifest.read_text() + (
        f'\n[tiers.app]\nfrom = "{upstream}"\ntemplate = "training.Dockerfile.j2"\n'
        'context = ["train"]\n'))
    first = ws.doit("push:app")
    text = first.stdout + first.stderr
    assert first.returncode == 0, text[-3000:]
    pins = read_lock(ws.root / "images.lock")
    pinned = ws.registry.digest("upstream/python", "1")
    assert pins[upstream] == pinned and pins["debian:bookworm-slim"] == LOCAL
    assert f"images.lock: {upstream} pinned to {pinned} (recorded)" in text
    dockerfile = (ws.root / "build" / "default" / "app" / "Dockerfile").read_text()
    assert f"FROM {upstream}@{pinned}" in dockerfile

    push_as(local["base"], upstream)  # upstream rebuilt the image under the same tag
    assert ws.registry.digest("upstream/python", "1") != pinned
    again = ws.doit("push:app")
    assert again.returncode == 0 and built(again.stdout + again.stderr) == []

    update = subprocess.run([sys.executable, "-m", "build_graph", "lock", "--update", upstream,
                             "--manifest", str(ws.manifest)], capture_output=True, text=True,
                            check=False, cwd=REPO)
    assert update.returncode == 0, update.stderr
    assert f"{upstream} pinned to" in update.stdout and f"moved from {pinned}" in update.stdout
    moved = ws.doit("push:app", "push:base")
    assert moved.returncode == 0
    assert built(moved.stdout + moved.stderr) == ["app"]  # exactly the tier on that image
