"""The pipeline is declared once: a stage added to the table (a row, and its one module)
reaches doit, `doit info`, the run summary and promote's gate, and a dodo.py written by
this release's `init` runs it unchanged."""

from __future__ import annotations

import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from doit.cmd_base import ModuleTaskLoader
from doit.doit_cmd import DoitMain

from build_graph.cli.init import init
from build_graph.errors import BuildFailed, ConfigError
from build_graph.oci.digest import parse_digest
from build_graph.oci.refs import Answer, Presence
from build_graph.plan.plan import plan
from build_graph.registry.availability import Availability
from build_graph.run.summary import RunSummary
from build_graph.run.tasks import StackTasks
from build_graph.stages import pipeline, promote
from build_graph.stages.work import Work
from tests import scan_stage
from tests.helpers import MINIMAL, load_text

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


def test_without_the_row_nothing_names_the_stage(scaffold: dict[str, Any]) -> None:
    tasks = tasks_by_name(scaffold)
    assert not [name for name in tasks if name.startswith("scan")]
    assert tasks["promote:base"]["task_dep"] == ["verify:base", "promote:fastext"]


def test_the_summary_shows_the_new_stage_s_column(with_scan: None) -> None:
    summary = RunSummary("demo")
    summary.ran("verify:base", 1.0, {"verify": "passed (5 checks)"})
    summary.ran("scan:base", 0.2, {"scan": "clean"})
    header, _, row = summary.markdown().splitlines()[4:7]
    assert header.split(" | ")[3:6] == ["compiler cache", "verify", "scan"]
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
        assert not promote.promoted(work, scan_only)
    finally:
        scan_stage.SAYS_SCANNED = True


def test_a_tier_named_like_a_stage_is_refused(with_scan: None, tmp_path: Path) -> None:
    for name in ("build", "scan"):
        stack = load_text(tmp_path, MINIMAL.replace("[tiers.base]", f"[tiers.{name}]"))
        with pytest.raises(ConfigError, match=f"tiers.{name}: '{name}' is a stage"):
            pipeline.check_tier_names(stack)
