"""The quickstart end to end against the real daemon and a private registry.

The tests run in file order on one workspace: full run, no-op, touch, edit, fresh machine.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from tests.browser import mermaid_blocks, render_mermaid
from tests.helpers import REPO
from tests.support.registry import Registry
from tests.support.workspace import Workspace, built, make_workspace, pushed, statuses

pytestmark = pytest.mark.integration
TIERS = ["builder", "fastext", "base", "training", "runner"]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory, registry: Registry) -> Iterator[Workspace]:
    yield make_workspace(tmp_path_factory.mktemp("ws"), registry)


def test_full_run_builds_pushes_verifies_and_promotes(
    ws: Workspace, browser: None, tmp_path: Path
) -> None:
    result = ws.doit()
    assert result.returncode == 0
    assert sorted(built(result)) == sorted(TIERS)
    # The summary draws the stack and the timeline, and Mermaid draws both in Chromium.
    chart, timeline = render_mermaid(
        mermaid_blocks((ws.root / "build" / "summary.md").read_text()), tmp_path
    )
    assert chart.error == "" and timeline.error == "", (chart.error, timeline.error)
    assert all(f"{tier}" in chart.svg for tier in TIERS) and chart.source.count(":::built") == 5
    assert all(f"section {tier}" in timeline.source for tier in TIERS)
    assert "compile" in timeline.svg and "verify" in timeline.svg
    for tier in TIERS:
        tags = ws.registry.tags(f"quickstart/{tier}")
        assert "latest" in tags and len(tags) >= 2  # the hash tag and latest
        report = json.loads((ws.root / "build" / "default" / tier / "verify.json").read_text())
        assert report["passed"] is True
        # every tier of the apt-locked quickstart: dpkg's database in the image is the locks'
        [apt] = [c for c in report["checks"] if c["name"] == "apt lock"]
        assert apt["status"] == "pass" and apt["actual"].endswith(" as locked"), apt
        # the report's layers: sizes, steps, and which the parent tier's image has
        layers = report["probe"]["layers"]
        assert all(layer["size"] > 0 for layer in layers)
        shared = [layer["shared"] for layer in layers]
        if tier in ("builder", "fastext"):  # root tiers: nothing to compare with
            assert set(shared) == {None}
        else:
            assert shared[0] is True and shared[-1] is False
        assert report["digest"] == ws.registry.digest(f"quickstart/{tier}", "latest")
    assert "py3.11" in ws.registry.tags("quickstart/fastext")
    # Promote copied the manifest in the registry: the daemon pulls what `latest` names.
    labels = (
        docker.from_env().images.pull(f"{ws.registry.address}/quickstart/base", tag="latest").labels
    )
    assert labels["io.build-graph.tier"] == "base"
    assert labels["org.opencontainers.image.revision"]
    assert len(labels["io.build-graph.content-hash"]) == 20
    # The runner really runs the training code through the launcher.
    run = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network=host",
            f"{ws.registry.address}/quickstart/runner:latest",
            "2",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("fingerprint=") == 2


def test_second_run_builds_and_pushes_nothing(ws: Workspace) -> None:
    result = ws.doit()
    assert result.returncode == 0
    assert built(result) == [] and pushed(result) == []
    for stage in ("build", "push", "verify", "promote"):
        assert f"-- {stage}:runner" in result.stdout


def test_touching_a_file_without_changing_it_rebuilds_nothing(ws: Workspace) -> None:
    (ws.root / "train" / "train.py").touch()
    ws.manifest.touch()
    result = ws.doit()
    assert result.returncode == 0
    assert built(result) == []


def test_editing_one_tier_rebuilds_it_and_its_descendants_only(ws: Workspace) -> None:
    before = ws.registry.digest("quickstart/base", "latest")
    train = ws.root / "train" / "train.py"
    train.write_text(train.read_text() + "\n# a change to the training code\n")
    result = ws.doit()
    assert result.returncode == 0
    assert built(result) == ["training", "runner"]
    assert ws.registry.digest("quickstart/base", "latest") == before
    report = json.loads((ws.root / "build" / "default" / "runner" / "verify.json").read_text())
    assert report["digest"] == ws.registry.digest("quickstart/runner", "latest")


def test_a_new_file_rebuilds_its_tier_and_descendants_and_dotenv_stays_out(ws: Workspace) -> None:
    """A file the last plan never knew rebuilds (the plan cache sees the folder change);
    a .env beside it is neither sent nor hashed."""
    before = ws.registry.digest("quickstart/base", "latest")
    (ws.root / "train" / "extra.py").write_text("EXTRA = 1\n")
    (ws.root / "train" / ".env").write_text("TOKEN=MARKER-env-9c1\n")
    assert statuses(ws) == {
        "builder": "up to date",
        "fastext": "up to date",
        "base": "up to date",
        "training": "build, push, verify, promote",
        "runner": "build, push, verify, promote",
    }
    info = ws.doit("info", "training")
    assert info.returncode == 1
    assert "A run would build, push, verify, promote:" in info.stdout
    assert "  - context file train/extra.py was added" in info.stdout
    assert ".env" not in info.stdout
    result = ws.doit()
    assert result.returncode == 0
    assert built(result) == ["training", "runner"]
    assert ws.registry.digest("quickstart/base", "latest") == before
    find = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network=host",
            "--entrypoint",
            "sh",
            f"{ws.registry.address}/quickstart/training:latest",
            "-c",
            "find / -xdev \\( -name extra.py -o -name .env \\) -path '*workspace*'",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert find.stdout.strip().endswith("extra.py") and ".env" not in find.stdout
    assert set(statuses(ws).values()) == {"up to date"}
    assert "Up to date" in ws.doit("info", "runner").stdout


def test_fresh_machine_rebuilds_and_pushes_nothing(ws: Workspace) -> None:
    client = docker.from_env()
    plan = json.loads(
        subprocess.run(
            [sys.executable, "-m", "build_graph", "plan", "--json", "--manifest", str(ws.manifest)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert {row["registry"] for row in plan} == {"present"}
    shutil.rmtree(ws.root / "build")  # the doit database, wheels, reports: all gone
    for row in plan:
        for ref in [
            row["image"],
            *(f"{row['image'].rsplit(':', 1)[0]}:{t}" for t in row["human_tags"]),
        ]:
            with contextlib.suppress(docker.errors.ImageNotFound):
                client.images.remove(ref, force=True)
    result = ws.doit()
    assert result.returncode == 0
    assert built(result) == []
    assert pushed(result) == []
    assert "-- compile:fastext" in result.stdout  # the image exists: no wheels needed


def test_plan_json_reports_hash_tags_and_presence(ws: Workspace) -> None:
    rows = json.loads(
        subprocess.run(
            [sys.executable, "-m", "build_graph", "plan", "--json", "--manifest", str(ws.manifest)],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        ).stdout
    )
    assert [r["tier"] for r in rows] == TIERS
    base = rows[2]
    assert base["parent"] == "fastext" and base["human_tags"] == ["latest"]
    assert base["image"].endswith(f":{base['hash']}")
    assert Path(base["dockerfile"]).is_file()
    assert base["registry"] == "present" and base["digest"].startswith("sha256:")


def size_of(ws: Workspace, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "build_graph", "size", *args, "--manifest", str(ws.manifest)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_size_names_fastexts_largest_layer_its_folders_and_what_it_adds(ws: Workspace) -> None:
    """Read from the registry's blobs: the largest layer and the folders that make it, what
    fastext adds over builder, and no wheel stored twice (the runtime template bind-mounts
    the wheels it installs: a COPY shipped them once more)."""
    lines = size_of(ws, "fastext", "--over", "builder").splitlines()
    [largest] = [line for line in lines if line.startswith("largest layer: ")]
    index = int(largest.split()[2])
    row = next(i for i, line in enumerate(lines) if line.startswith(f"{index:>5}  "))
    assert lines[row + 1].strip().startswith("folders: /")
    [over] = [line for line in lines if line.startswith("over ")]
    assert "/quickstart/builder:" in over and " adds " in over and "compressed" in over
    assert "stored twice: nothing" in lines


def test_a_layer_limit_set_later_fails_verify_naming_the_layer_and_moves_no_tag(
    ws: Workspace,
) -> None:
    """No input of any hash: nothing rebuilds, but verify's promises changed, so every tier
    is verified again, and the debian layer they share is past a 40 MiB limit."""
    latest = {tier: ws.registry.digest(f"quickstart/{tier}", "latest") for tier in TIERS}
    original = ws.manifest.read_text()
    ws.manifest.write_text(original + '\n[layers]\nmax_size = "40M"\n')
    try:
        result = ws.doit("--continue")
        assert result.returncode == 1
        assert built(result) == [] and pushed(result) == []
        said = result.stdout + result.stderr
        assert "layer size failed" in said
        assert "compressed" in said and "at most 41.9 MB per layer ([layers] max_size)" in said
        assert {t: ws.registry.digest(f"quickstart/{t}", "latest") for t in TIERS} == latest
    finally:
        ws.manifest.write_text(original)
    again = ws.doit()
    assert again.returncode == 0 and built(again) == []
