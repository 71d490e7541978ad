"""Planning needs the registry only: with the Docker daemon unreachable, every read-only
command and a no-op run work, and a run that needs the daemon says so in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.registry import Registry
from tests.support.workspace import Workspace, make_workspace, statuses

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pushed(tmp_path_factory: pytest.TempPathFactory, registry: Registry) -> Iterator[Workspace]:
    """The quickstart, built, pushed, verified and promoted once with the real daemon."""
    ws = make_workspace(tmp_path_factory.mktemp("nodaemon"), registry)
    assert ws.doit().returncode == 0
    yield ws


@pytest.fixture
def no_daemon(tmp_path: Path) -> dict[str, str]:
    # A socket path that does not exist: the shared daemon is never touched or stopped.
    return {"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}


def cli(ws: Workspace, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "build_graph", *args, "--manifest", str(ws.manifest)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **env},
        timeout=300,
    )


def test_read_only_commands_and_a_no_op_need_no_daemon(
    pushed: Workspace, no_daemon: dict[str, str]
) -> None:
    results = [
        cli(pushed, no_daemon, "check"),
        cli(pushed, no_daemon, "plan", "--json"),
        pushed.doit("list", env=no_daemon),
        pushed.doit("info", "training", env=no_daemon),
        pushed.doit("list", "--all", "--status", env=no_daemon),
        pushed.doit(env=no_daemon),
    ]
    for result in results:
        text = result.stdout + result.stderr
        assert result.returncode == 0, text
        assert "Traceback" not in text and "Docker daemon" not in text
    assert '"local": null' in results[1].stdout  # unknown, not 'absent'
    assert "a run does nothing" in results[3].stdout
    assert "+ docker" not in results[5].stdout  # nothing built, pushed or pulled
    # The records the run left (push.json) make planning ask for this runner's report:
    # the question that used to ask the daemon whether it has a GPU.
    assert set(statuses_without_daemon(pushed, no_daemon).values()) == {"up to date"}


def statuses_without_daemon(ws: Workspace, env: dict[str, str]) -> dict[str, str]:
    result = ws.doit("list", "--status", env=env)
    assert result.returncode == 0, result.stderr
    return _parse(result.stdout)


def _parse(out: str) -> dict[str, str]:
    import re

    found = {}
    for line in out.splitlines():
        match = re.match(r"^(.*?)\s{2,}(\S+)\s+(?:on|from) ", line)
        assert match, line
        found[match[2]] = match[1]
    return found


def test_a_run_that_needs_the_daemon_says_so_in_one_line(
    pushed: Workspace, no_daemon: dict[str, str]
) -> None:
    text = pushed.manifest.read_text()
    pushed.edit(
        'context = ["src/teamlib"]', 'context = ["src/teamlib"]\nbuild_args = { NODAEMON = "1" }'
    )
    try:
        plan = _parse(pushed.doit("list", "--status", env=no_daemon).stdout)
        assert plan["base"].startswith("build") and plan["fastext"] == "up to date"
        # Quiet, as a user runs it: the terminal gets the failure once.
        result = pushed.doit("base", env={**no_daemon, "BUILD_GRAPH_VERBOSE": ""})
    finally:
        pushed.manifest.write_text(text)
    out = result.stdout + result.stderr
    assert result.returncode == 3
    assert "Traceback" not in out
    lines = [line for line in out.splitlines() if "needs the Docker daemon" in line]
    assert len(lines) == 1, out
    assert (
        lines[0]
        .strip()
        .startswith(
            "build:base needs the Docker daemon: cannot reach the "
            f"Docker daemon at {no_daemon['DOCKER_HOST']}"
        )
    )
    assert "point DOCKER_HOST at one" in lines[0]
    assert statuses(pushed)["base"] == "up to date"  # the real daemon was left as it was
