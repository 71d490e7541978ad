"""The registry is the truth, across machines: real daemon, real registry, several workspaces.

One workspace (`origin`) builds and promotes the quickstart once; the tests then act as
other runners (fresh copies of the folder, no build/) or break the registry as garbage
collection or a person would, and check what the next plain run does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import doit_command
from tests.support.engines import engine_events
from tests.support.registry import Registry
from tests.support.workspace import (
    Workspace,
    built,
    make_workspace,
    pushed,
    ran,
    recorded,
    statuses,
)

pytestmark = pytest.mark.integration
TIERS = ["builder", "fastext", "base", "training", "runner"]


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory, registry: Registry) -> Iterator[Workspace]:
    ws = make_workspace(tmp_path_factory.mktemp("origin"), registry)
    result = ws.doit()
    assert result.returncode == 0, result.stdout[-3000:]
    yield ws


def runner(origin: Workspace, folder: Path) -> Workspace:
    """Another machine's checkout of the same stack: the folder without build/."""
    root = folder / "quickstart"
    shutil.copytree(origin.root, root, ignore=shutil.ignore_patterns("build"))
    return Workspace(root, origin.registry)


def quiet_second() -> int:
    """A whole second after the last event of earlier runs (the daemon counts events by
    the second): where the events of the run that follows begin."""
    time.sleep(1.1)
    return int(time.time())


def plan_rows(ws: Workspace) -> list[dict[str, object]]:
    return list(
        json.loads(
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "build_graph",
                    "plan",
                    "--json",
                    "--manifest",
                    str(ws.manifest),
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
    )


def report_for(ws: Workspace, tier: str, digest: str) -> dict[str, object] | None:
    """The passing report the registry holds for `digest`, read over the registry's API."""
    repo = f"quickstart/{tier}"
    prefix = digest.replace(":", "-", 1) + ".verify-"
    for tag in ws.registry.tags(repo):
        if tag.startswith(prefix):
            base = f"http://{ws.registry.address}/v2/{repo}"
            request = urllib.request.Request(
                f"{base}/manifests/{tag}",
                headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
            )
            with urllib.request.urlopen(request) as response:
                manifest = json.load(response)
            assert manifest["subject"]["digest"] == digest  # bound to the image
            with urllib.request.urlopen(f"{base}/blobs/{manifest['layers'][0]['digest']}") as r:
                document = json.load(r)
            # an in-toto Statement since issue 22: the report is its predicate
            report: dict[str, object] = document.get("predicate", document)
            if report["passed"] is True and report["digest"] == digest:
                return report
    return None


def test_a_fresh_runner_on_a_complete_registry_pulls_builds_and_runs_nothing(
    origin: Workspace, tmp_path: Path
) -> None:
    other = runner(origin, tmp_path)
    since = quiet_second()
    started = time.perf_counter()
    result = other.doit()
    elapsed = time.perf_counter() - started
    text = result.stdout + result.stderr
    assert result.returncode == 0, text[-3000:]
    events = engine_events(since, origin.registry.address)
    assert built(result) == [] and pushed(result) == [] and ran(result, "verify") == []
    assert [e for e in events if e[0] == "container" or e[1] == "pull"] == []
    # Every report came from the registry, made by the origin's run; none was re-made.
    for tier in TIERS:
        kept, made = (
            json.loads((ws.root / "build" / "default" / tier / "verify.json").read_text())
            for ws in (other, origin)
        )
        assert kept["passed"] is True and kept["made_by"] == made["made_by"]
    print(f"fresh runner: {elapsed:.2f} s, {len(events)} daemon events")


def test_a_deleted_image_is_rebuilt_or_pushed_and_latest_repaired_in_one_run(
    origin: Workspace,
) -> None:
    digest = origin.registry.digest("quickstart/runner", "latest")
    assert digest is not None
    request = urllib.request.Request(
        f"http://{origin.registry.address}/v2/quickstart/runner/manifests/{digest}", method="DELETE"
    )
    urllib.request.urlopen(request)  # garbage collection, a retention policy, a person
    assert origin.registry.digest("quickstart/runner", "latest") is None
    assert statuses(origin)["runner"] != "up to date"
    assert "not in the registry" in origin.doit("info", "runner").stdout
    result = origin.doit()
    assert result.returncode == 0, result.stdout[-3000:]
    now = origin.registry.digest("quickstart/runner", "latest")
    hashed = next(r for r in plan_rows(origin) if r["tier"] == "runner")
    assert now is not None and now == hashed["digest"]
    assert report_for(origin, "runner", now) is not None
    # and the next run has nothing left to do
    again = origin.doit()
    assert again.returncode == 0, again.stdout[-3000:]
    assert "-- promote:runner" in again.stdout and built(again) == []


def test_a_new_tag_is_promoted_without_a_pull(origin: Workspace) -> None:
    origin.edit('tags = ["py{python}"]', 'tags = ["py{python}", "stable"]')
    try:
        since = quiet_second()
        result = origin.doit()
        assert result.returncode == 0, result.stdout[-3000:]
        assert [e for e in engine_events(since, origin.registry.address) if e[1] == "pull"] == []
        assert built(result) == [] and ran(result, "verify") == []
        assert origin.registry.digest("quickstart/fastext", "stable") == origin.registry.digest(
            "quickstart/fastext", "latest"
        )
        assert "stable -> sha256:" in result.stderr and "0 layer bytes moved" in result.stderr
    finally:
        origin.edit('tags = ["py{python}", "stable"]', 'tags = ["py{python}"]')


RACE_TIER = """
[tiers.raced]
parent = "fastext"
template = "raced.Dockerfile.j2"
"""


def test_racing_runners_on_one_new_hash_both_succeed_and_agree(
    origin: Workspace, tmp_path: Path
) -> None:
    workspaces = [runner(origin, tmp_path / name) for name in ("a", "b")]
    for ws in workspaces:
        (ws.root / "templates" / "raced.Dockerfile.j2").write_text(
            "FROM {{ base_image }}\nRUN date +%s%N > /built-at\n"
        )
        ws.manifest.write_text(ws.manifest.read_text() + RACE_TIER)

    env = {**os.environ, "BUILD_GRAPH_VERBOSE": "1"}
    runs = [
        subprocess.Popen(
            doit_command(ws.manifest, "promote:raced"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for ws in workspaces
    ]
    outputs = [run.communicate(timeout=900)[0] for run in runs]
    for ws, run, out in zip(workspaces, runs, outputs, strict=True):
        assert run.returncode == 0, out[-3000:]
        done = recorded(ws.root, subprocess.CompletedProcess(run.args, run.returncode, out, ""))
        assert built(done) == ["raced"]  # both really built it: two different digests
    print(*(line for out in outputs for line in out.splitlines() if "adopting" in line))
    hashed = next(r for r in plan_rows(workspaces[0]) if r["tier"] == "raced")
    latest = origin.registry.digest("quickstart/raced", "latest")
    assert latest is not None and latest == hashed["digest"]
    assert report_for(origin, "raced", latest) is not None
    # Both now agree with the registry: a plain run on either does nothing.
    for ws in workspaces:
        again = ws.doit("promote:raced")
        assert again.returncode == 0 and built(again) == []
        assert "-- promote:raced" in again.stdout and "-- verify:raced" in again.stdout
