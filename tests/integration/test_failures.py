"""Failures are loud and safe: nothing unverified is promoted, nothing absent is assumed."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.helpers import REPO
from tests.integration.conftest import Registry, Workspace, built, make_workspace

pytestmark = pytest.mark.integration


@pytest.fixture
def ws(tmp_path: pytest.TempPathFactory, registry: Registry) -> Iterator[Workspace]:
    yield make_workspace(tmp_path, registry)  # type: ignore[arg-type]


def test_failed_verify_promotes_neither_the_tier_nor_its_children(ws: Workspace) -> None:
    ws.edit('packages = { teamlib = ">=0.1" }', 'packages = { teamlib = ">=9" }')
    # --continue: doit interleaves independent tasks and stops at the first failure; going on
    # lets every branch that passed be promoted, so the assertions below do not depend on
    # the order doit happened to pick.
    result = ws.doit("--continue")
    assert result.returncode != 0
    text = result.stdout + result.stderr
    assert "verify of base" in text and "package teamlib: expected >=9; got 0.1.0" in text
    assert "Traceback" not in text
    reg = ws.registry
    assert "latest" in reg.tags("quickstart/fastext")  # the parent passed: promoted
    for tier in ("base", "training", "runner"):
        assert "latest" not in reg.tags(f"quickstart/{tier}"), tier
    report = (ws.root / "build" / "default" / "base" / "verify.json").read_text()
    assert '"passed": false' in report


def test_stopped_registry_fails_clearly_and_moves_no_tag(ws: Workspace) -> None:
    first = ws.doit("promote:fastext")
    assert first.returncode == 0
    before = ws.registry.digest("quickstart/fastext", "latest")
    ws.edit('context = ["src/teamlib"]', 'context = ["src/teamlib"]\nbuild_args = { EDIT = "1" }')
    ws.registry.stop()
    try:
        result = ws.doit()
    finally:
        ws.registry.start()
    text = result.stdout + result.stderr
    assert result.returncode != 0
    assert "cannot ask the registry" in text and "scripts/services.sh up" in text
    assert "Traceback" not in text
    assert built(text) == []  # an unanswered probe is never read as 'absent'
    assert ws.registry.digest("quickstart/fastext", "latest") == before
    assert "latest" not in ws.registry.tags("quickstart/base")


def test_missing_docker_daemon_is_one_clear_line(ws: Workspace) -> None:
    result = ws.doit("build:builder", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    text = result.stdout + result.stderr
    assert result.returncode != 0
    assert "cannot reach the Docker daemon" in text and "scripts/services.sh up" in text
    assert "Traceback" not in text


def test_bad_manifest_fails_before_anything_runs(ws: Workspace) -> None:
    ws.edit('parent = "base"', 'parent = "bse"')
    result = ws.doit()
    assert result.returncode == 2
    assert "tiers.training.parent: no tier named 'bse' (did you mean 'base'?)" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not (ws.root / "build").exists()


def test_plan_json_says_registry_errors(ws: Workspace) -> None:
    ws.registry.stop()
    try:
        out = subprocess.run([sys.executable, "-m", "build_graph", "plan", "--json",
                              "--manifest", str(ws.manifest)],
                             capture_output=True, text=True, check=True).stdout
    finally:
        ws.registry.start()
    assert '"registry": "error"' in out and '"registry": "absent"' not in out


def test_ctrl_c_is_one_line_and_records_nothing(ws: Workspace) -> None:
    """SIGINT in the middle of a build: exit 130, one line, no traceback, no record, no tag."""
    template = ws.root / "templates" / "slow.Dockerfile.j2"
    template.write_text("FROM {{ base_image }}\nRUN echo building-slowly && sleep 60\n")
    ws.manifest.write_text(ws.manifest.read_text() + '\n[tiers.slow]\nparent = "fastext"\n'
                           'template = "slow.Dockerfile.j2"\n')
    assert ws.doit("promote:fastext").returncode == 0
    command = [sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py"),
               f"manifest={ws.manifest}", "promote:slow"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as proc:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if "building-slowly" in line:
                proc.send_signal(signal.SIGINT)
                break
        rest, _ = proc.communicate(timeout=120)
    text = "".join(seen) + rest
    assert proc.returncode == 130, text[-2000:]
    assert "Traceback" not in text
    assert [line for line in text.splitlines() if line.startswith("interrupted")] == [
        "interrupted during build of slow: stopped; nothing interrupted was recorded as done"]
    slow = ws.root / "build" / "default" / "slow"
    assert not (slow / "push.json").exists() and not (slow / "verify.json").exists()
    assert ws.registry.tags("quickstart/slow") == []
