"""The pipeline is declared once: a stage added to the table (a row, and its one module)
reaches doit, `doit info`, the run summary and promote's gate, and a dodo.py written by
this release's `init` runs it unchanged."""

from __future__ import annotations

import dataclasses
import runpy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from doit.cmd_base import ModuleTaskLoader
from doit.control import TaskControl
from doit.doit_cmd import DoitMain
from doit.loader import load_tasks

from build_graph.cli.init import init
from build_graph.errors import BuildFailed, ConfigError
from build_graph.oci.digest import parse_digest
from build_graph.oci.refs import Answer, Presence
from build_graph.plan.plan import plan
from build_graph.registry.availability import Availability
from build_graph.run.stack import check_tier_names
from build_graph.run.summary import RunSummary
from build_graph.run.tasks import StackTasks
from build_graph.stages import pipeline, promote
from build_graph.stages.stage import Need, Stage
from build_graph.stages.work import Work
from tests import scan_stage
from tests.helpers import MINIMAL, load_text, write_manifest

DIGEST = parse_digest("sha256:" + "ab" * 32)


@pytest.fixture
def with_scan(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The table with a scan stage after verify: the only place the test touches."""
    table = list(pipeline.STAGES)
    table.insert([s.name for s in table].index("verify") + 1, scan_stage.STAGE)
    monkeypatch.setattr(pipeline, "STAGES", tuple(table))
    scan_stage.SCANNED.clear()
    yield
    scan_stage.SCANNED.clear()


@pytest.fixture
def scaffold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The quickstart written by `init`, its dodo.py loaded as doit loads it (`doit list`)."""
    init(tmp_path / "repo", "quickstart")
    monkeypatch.chdir(tmp_path / "repo")
    monkeypatch.setattr(sys, "argv", ["doit", "list", "--all"])  # a read-only command
    return runpy.run_path(str(tmp_path / "repo" / "dodo.py"))


def doit_main(namespace: dict[str, Any], *args: str) -> int:
    return int(DoitMain(ModuleTaskLoader(namespace)).run(list(args)))


def tasks_by_name(namespace: dict[str, Any]) -> dict[str, dict[str, Any]]:
    stack: StackTasks = namespace["_TASKS"]
    return {
        f"{t['basename']}:{t['name']}" if t.get("name") else t["basename"]: t for t in stack.all()
    }


def test_an_init_dodo_lists_a_new_stage_unchanged(
    with_scan: None, scaffold: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert doit_main(scaffold, "list", "--all") == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    for tier in ("fastext", "base", "training", "runner"):
        assert f"scan:{tier}" in names
    assert doit_main(scaffold, "list") == 0  # the tiers, as before
    assert capsys.readouterr().out.splitlines()[0].startswith("builder ")


def test_the_new_stage_runs_after_verify_and_before_promote(
    with_scan: None, scaffold: dict[str, Any]
) -> None:
    tasks = tasks_by_name(scaffold)
    assert tasks["scan:base"]["task_dep"] == ["verify:base"]
    # promote waits for every gate of the tier's image, then its parent's promote
    assert tasks["promote:base"]["task_dep"] == ["verify:base", "scan:base", "promote:fastext"]
    assert "scan:base" in tasks["base"]["meta"]["tier"]["tasks"]  # `doit info base`
    says = repr(tasks["scan:base"]["uptodate"][0])
    assert says.startswith("up to date when ") and "was scanned" in says


def test_a_dodo_py_written_before_the_table_runs_the_new_stage_too(
    with_scan: None, scaffold: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A team's dodo.py from the release before (one `task_` per stage, by name) lists the
    new stage and its promote waits for it: no 'task dependency does not exist'."""
    old = tmp_path / "repo" / "dodo.py"
    old.write_text((Path(__file__).parent / "dodo_before_the_table.py.txt").read_text())
    namespace = runpy.run_path(str(old))
    assert doit_main(namespace, "list", "--all") == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert "scan:base" in names and "promote:base" in names and "render:base" in names
    assert len(names) == len(set(names))  # every task once


def test_an_old_dodo_py_gets_a_stage_added_after_promote_too(
    monkeypatch: pytest.MonkeyPatch, scaffold: dict[str, Any], tmp_path: Path
) -> None:
    """Whatever the table's last stage becomes, the old file's `promote` generator yields the
    stages it does not name, so every dependency exists (doit's TaskControl checks)."""
    announce = Stage(
        "announce",
        "say the tier moved (a test's no-op)",
        act=lambda work: None,
        needs=(Need("promote"),),
        per="tier",
    )
    monkeypatch.setattr(pipeline, "STAGES", (*pipeline.STAGES, announce))
    old = tmp_path / "repo" / "dodo.py"
    old.write_text((Path(__file__).parent / "dodo_before_the_table.py.txt").read_text())
    tasks = load_tasks(runpy.run_path(str(old)))
    TaskControl(tasks)  # raises InvalidTask for a dependency that does not exist
    names = [task.name for task in tasks]
    assert "announce:runner" in names and len(names) == len(set(names))
    assert pipeline.final() == "announce"


def test_a_gate_that_applies_to_some_tiers_gates_only_those(
    with_scan: None, monkeypatch: pytest.MonkeyPatch, scaffold: dict[str, Any], tmp_path: Path
) -> None:
    only_base = dataclasses.replace(scan_stage.STAGE, applies=lambda tier: tier.spec.name == "base")
    monkeypatch.setattr(
        pipeline, "STAGES", tuple(only_base if s.name == "scan" else s for s in pipeline.STAGES)
    )
    tasks = tasks_by_name(runpy.run_path(str(tmp_path / "repo" / "dodo.py")))
    assert "scan:runner" not in tasks and "scan:base" in tasks
    assert tasks["promote:runner"]["task_dep"] == ["verify:runner", "promote:training"]
    assert "scan:runner" not in tasks["runner"]["meta"]["tier"]["tasks"]
    image = scaffold["_TASKS"].by_key["runner"]
    assert [g.name for g in promote.gates_of(image, pipeline.gates())] == ["verify"]


def test_an_image_no_gate_applies_to_is_never_promoted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    work = gate_work(tmp_path)
    none_apply = [dataclasses.replace(g, applies=lambda tier: False) for g in pipeline.gates()]
    with pytest.raises(BuildFailed, match="no gate applies"):
        promote._gated(work, none_apply, group=False)


def test_every_command_refuses_a_tier_named_like_a_stage(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, MINIMAL.replace("[tiers.base]", "[tiers.build]"))
    for command in (["check", "--offline"], ["plan"], ["lock"], ["ci", "--github"]):
        result = subprocess.run(
            [sys.executable, "-m", "build_graph", *command, "--manifest", str(manifest)],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert result.returncode == 2, (command, result.stderr)
        assert "tiers.build: 'build' is a stage" in result.stderr, command


def test_without_the_row_nothing_names_the_stage(scaffold: dict[str, Any]) -> None:
    tasks = tasks_by_name(scaffold)
    assert not [name for name in tasks if name.startswith("scan")]
    assert tasks["promote:base"]["task_dep"] == ["verify:base", "promote:fastext"]


def test_the_summary_shows_the_new_stage_s_column(with_scan: None) -> None:
    summary = RunSummary("demo")
    summary.ran("verify:base", 1.0, {"verify": "passed (5 checks)"})
    summary.ran("scan:base", 0.2, {"scan": "clean"})
    header, _, row = summary.markdown().splitlines()[4:7]
    assert header.split(" | ")[3:10] == [
        "compiler cache",
        "compile time",
        "built",
        "pushed",
        "pulled",
        "verify",
        "scan",
    ]
    assert "| clean |" in row and "verify, scan" in row


class Answers(Availability):
    """The registry's answers for a unit test of the gate's rules (no registry asked)."""

    def __init__(self, answers: dict[str, Answer]) -> None:
        super().__init__()
        self._registry.update(answers)

    def refresh(self, ref: str) -> Answer:
        return self._registry.get(ref, Answer(Presence.ABSENT))


def gate_work(tmp_path: Path) -> Work:
    stack = load_text(tmp_path, MINIMAL)
    tasks = StackTasks(stack, plan(stack))
    tier = tasks.planned[0]
    holdings = Answers({tier.image: Answer(Presence.PRESENT, DIGEST)})
    return Work(stack, (tier,), holdings, tasks.by_key)


def test_promote_runs_a_gate_nobody_ran_then_requires_it_passed(
    with_scan: None, tmp_path: Path
) -> None:
    work = gate_work(tmp_path)
    scan_only = [g for g in pipeline.gates() if g.name == "scan"]
    assert [g.name for g in pipeline.gates()] == ["verify", "scan"]
    digest, said = promote._gated(work, scan_only, group=False)  # scans first: it passes
    assert (digest, said) == (DIGEST, {"scan": "clean"})
    scan_stage.SCANNED.clear()
    scan_stage.SAYS_SCANNED = False  # a scan that does not pass: nothing is promoted
    try:
        with pytest.raises(BuildFailed, match="has not passed scan; human tags stay"):
            promote._gated(work, scan_only, group=False)
        assert not promote.promoted(dataclasses.replace(work, gates=tuple(scan_only)))
    finally:
        scan_stage.SAYS_SCANNED = True


def test_a_tier_named_like_a_stage_is_refused(with_scan: None, tmp_path: Path) -> None:
    for name in ("build", "scan"):
        stack = load_text(tmp_path, MINIMAL.replace("[tiers.base]", f"[tiers.{name}]"))
        with pytest.raises(ConfigError, match=f"tiers.{name}: '{name}' is a stage"):
            check_tier_names(stack)
