"""Failures are loud and safe: nothing unverified is promoted, nothing absent is assumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from tests.helpers import REPO
from tests.support.registry import Registry
from tests.support.workspace import (
    Workspace,
    built,
    image_as_stored_and_pushed,
    make_workspace,
    output_of,
)

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
    assert result.returncode == 1  # a failed verify, also when dependents could not run
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
    assert result.returncode == 3  # the environment, not the build
    assert "cannot ask the registry" in text and "scripts/services.sh up" in text
    assert "Traceback" not in text
    assert built(result) == []  # an unanswered probe is never read as 'absent'
    assert ws.registry.digest("quickstart/fastext", "latest") == before
    assert "latest" not in ws.registry.tags("quickstart/base")


def test_missing_docker_daemon_is_one_clear_line(ws: Workspace) -> None:
    # A tier the registry does not hold (one it holds needs no daemon to be up to date).
    (ws.root / "templates" / "nodaemon.Dockerfile.j2").write_text(
        "FROM {{ base_image }}\nRUN echo nodaemon > /nodaemon\n"
    )
    ws.manifest.write_text(
        ws.manifest.read_text()
        + ('\n[tiers.nodaemon]\nparent = "builder"\ntemplate = "nodaemon.Dockerfile.j2"\n')
    )
    result = ws.doit("build:nodaemon", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    text = result.stdout + result.stderr
    assert result.returncode == 3
    assert "cannot reach the Docker daemon" in text and "scripts/services.sh up" in text
    assert "Traceback" not in text


def test_bad_manifest_fails_before_anything_runs(tmp_path: Path, registry: Registry) -> None:
    # cold: a workspace sharing the session's compiler cache gets it in build/ before its run
    ws = make_workspace(tmp_path, registry, cold=True)
    ws.edit('parent = "base"', 'parent = "bse"')
    result = ws.doit()
    assert result.returncode == 2
    assert "tiers.training.parent: no tier named 'bse' (did you mean 'base'?)" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not (ws.root / "build").exists()


def test_plan_json_says_registry_errors(ws: Workspace) -> None:
    # A tier the daemon here holds: its row says 'built', and that must not hide that the
    # registry could not be asked (it once exited 0 after other tests had built tiers).
    from build_graph.manifest.load import load
    from build_graph.plan.plan import plan

    images = [t.image for t in plan(load(ws.manifest))]
    # Every tier held here, as after a build with the registry down; tiers earlier tests
    # built are left as they are, and only the tags made here are removed afterwards.
    held = [
        i
        for i in images
        if subprocess.run(["docker", "image", "inspect", i], capture_output=True).returncode != 0
    ]
    for image in held:
        subprocess.run(["docker", "tag", "debian:bookworm-slim", image], check=True)
    ws.registry.stop()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "build_graph", "plan", "--json", "--manifest", str(ws.manifest)],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        ws.registry.start()
    # The rows still say what could not be asked, and the exit says the plan is no plan
    # (3, since `plan` stopped printing guesses with exit 0).
    assert done.returncode == 3, done.stderr
    assert '"registry": "error"' in done.stdout and '"registry": "absent"' not in done.stdout
    assert '"status": "built"' in done.stdout  # held here: still exit 3
    subprocess.run(["docker", "rmi", *held], check=False, capture_output=True)


def test_ctrl_c_is_one_line_and_records_nothing(ws: Workspace) -> None:
    """SIGINT in the middle of a build: exit 130, one line, no traceback, no record, no tag."""
    template = ws.root / "templates" / "slow.Dockerfile.j2"
    template.write_text("FROM {{ base_image }}\nRUN echo building-slowly && sleep 60\n")
    ws.manifest.write_text(
        ws.manifest.read_text() + '\n[tiers.slow]\nparent = "fastext"\n'
        'template = "slow.Dockerfile.j2"\n'
    )
    assert ws.doit("fastext").returncode == 0  # `doit <tier>`: through promote
    assert "latest" in ws.registry.tags("quickstart/fastext")
    command = [
        sys.executable,
        "-m",
        "doit",
        "-f",
        str(REPO / "dodo.py"),
        f"manifest={ws.manifest}",
        "promote:slow",
    ]
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "BUILD_GRAPH_VERBOSE": "1"},
        # Ctrl-C as a terminal sends it: a suite started in the background (`cmd &` in a
        # script) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as proc:
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
        "interrupted during build of slow: stopped; nothing interrupted was recorded as done"
    ]
    slow = ws.root / "build" / "default" / "slow"
    assert not (slow / "push.json").exists() and not (slow / "verify.json").exists()
    assert ws.registry.tags("quickstart/slow") == []


HOSTILE = '$HOME $PATH "quoted" `id` $(id) \\ & <b>'
HOSTILE_TEMPLATE = """\
{% import "_macros.j2" as m %}
FROM {{ base_image }}
{{ m.build_args(tier.build_args) }}
RUN printf '%s' "$GREETING" > /greeting
"""


def test_hostile_values_arrive_literally(ws: Workspace) -> None:
    """'$' in ARG/LABEL values, quotes in the launcher's exec form: the image holds exactly
    the value images.toml gave, nothing is expanded or executed."""
    (ws.root / "templates" / "hostile.Dockerfile.j2").write_text(HOSTILE_TEMPLATE)
    launcher = '"; touch /pwned ; "'
    ws.edit(
        'context = ["launcher/launch.py"]',
        f'context = ["launcher/launch.py"]\nbuild_args = {{ LAUNCHER = {json.dumps(launcher)} }}',
    )
    ws.manifest.write_text(
        ws.manifest.read_text()
        + (
            '\n[tiers.hostile]\nparent = "fastext"\ntemplate = "hostile.Dockerfile.j2"\n'
            f"description = {json.dumps(HOSTILE)}\n"
            f"build_args = {{ GREETING = {json.dumps(HOSTILE)} }}\n"
        )
    )
    result = ws.doit("build:hostile", "build:runner")
    assert result.returncode == 0
    # The images this run built, by their hash tags (other tests leave other runner images).
    tags = {
        line.rsplit("(tier ", 1)[1].rstrip(")"): line.split(" -t ", 1)[1].split()[0]
        for line in (result.stdout + result.stderr).splitlines()
        if line.startswith("+ docker build")
    }
    client = docker.from_env()
    assert output_of(tags["hostile"], ["cat", "/greeting"]) == HOSTILE
    labels = client.images.get(tags["hostile"]).labels
    assert labels["org.opencontainers.image.description"] == HOSTILE
    config = client.images.get(tags["runner"]).attrs["Config"]
    assert config["Entrypoint"] == ["python3", f"/opt/runner/{launcher}"]


def test_credentials_never_reach_an_image_label_or_log(ws: Workspace) -> None:
    marker = "MARKER-7d2e"
    # Without BuildKit a credential could only be a build arg: refused before any build.
    refused = ws.doit(
        env={
            "BUILD_GRAPH_PIP_INDEX_URL": f"https://ci:{marker}@pypi.example/simple",
            "BUILD_GRAPH_BUILDER": "classic",
        }
    )
    text = refused.stdout + refused.stderr
    assert refused.returncode == 2
    assert (
        "BUILD_GRAPH_PIP_INDEX_URL (https://***@pypi.example/simple) carries a credential"
    ) in text
    assert marker not in text and built(refused) == []
    # A CI job token in the git remote (GitLab's style) must not become a label.
    git = ["git", "-C", str(ws.root), "-c", "user.name=ci", "-c", "user.email=ci@example"]
    subprocess.run(["git", "init", "-q", str(ws.root)], check=True)
    subprocess.run(
        [
            *git,
            "remote",
            "add",
            "origin",
            f"https://gitlab-ci-token:{marker}@gitlab.example/team/stack.git",
        ],
        check=True,
    )
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "stack"], check=True)
    (ws.root / "templates" / "labelled.Dockerfile.j2").write_text(
        "FROM {{ base_image }}\nRUN echo labelled > /labelled\n"
    )
    ws.manifest.write_text(
        ws.manifest.read_text()
        + ('\n[tiers.labelled]\nparent = "fastext"\ntemplate = "labelled.Dockerfile.j2"\n')
    )
    result = ws.doit("push:labelled")
    assert result.returncode == 0
    assert marker not in result.stdout + result.stderr
    image, texts = image_as_stored_and_pushed(ws, "labelled")
    assert image.labels["org.opencontainers.image.source"] == (
        "https://gitlab.example/team/stack.git"
    )
    for blob in texts:
        assert marker.encode() not in blob
