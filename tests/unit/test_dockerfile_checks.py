"""Pre-flight's Dockerfile checks remember a pass on this machine, by what decides it, and
never a failure: the check itself is BuildKit's (tests/integration/test_preflight.py runs
it for real); here buildx's answers are stood in for, to see what is asked again."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from build_graph.docker import buildkit
from build_graph.manifest.load import load
from build_graph.plan.plan import PlannedTier, plan
from build_graph.stages import dockerfile_checks
from tests.helpers import REPO

CHECK = ["docker", "buildx", "build", "--call", "check"]
PASSED = "WARNING: JSONArgsRecommended - JSON arguments recommended\nCheck complete, 1 warning"
REFUSED = "ERROR: dockerfile parse error on line 9: unknown instruction: RUNN"


@pytest.fixture
def training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PlannedTier:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    planned = plan(load(REPO / "examples" / "quickstart" / "images.toml"))
    return next(t for t in planned if t.spec.name == "training")


def answering(monkeypatch: pytest.MonkeyPatch, code: int, said: str) -> list[list[str]]:
    asked: list[list[str]] = []

    def run(command: list[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
        asked.append(command)
        return subprocess.CompletedProcess(command, code, "", said)

    monkeypatch.setattr(buildkit, "run", run)
    return asked


def check(tier: PlannedTier, tmp_path: Path, asked: str = "buildx v0.29.1\n28.5.2") -> str | None:
    empty = tmp_path / "context"
    empty.mkdir(exist_ok=True)
    return dockerfile_checks._check_one(CHECK, tier, set(), tmp_path, empty, asked)


def test_a_pass_is_remembered_with_its_notes_and_not_asked_again(
    training: PlannedTier,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    asked = answering(monkeypatch, 0, PASSED)
    assert check(training, tmp_path) is None
    assert len(asked) == 1
    assert check(training, tmp_path) is None  # remembered: buildx not asked
    assert len(asked) == 1
    notes = [line for line in capsys.readouterr().err.splitlines() if "Dockerfile check:" in line]
    assert (
        notes
        == ["note: training: Dockerfile check: JSONArgsRecommended - JSON arguments recommended"]
        * 2
    )
    # another buildx or engine, or another text, is asked again
    assert check(training, tmp_path, asked="buildx v0.30.0\n28.5.2") is None
    assert len(asked) == 2
    edited = dataclasses.replace(training, dockerfile=training.dockerfile + "\nLABEL a=b\n")
    assert check(edited, tmp_path) is None
    assert len(asked) == 3


def test_a_failure_is_never_remembered(
    training: PlannedTier, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = answering(monkeypatch, 1, REFUSED)
    for _ in range(2):
        said = check(training, tmp_path)
        assert said is not None and "unknown instruction: RUNN" in said
    assert len(asked) == 2
    kept = tmp_path / "xdg" / "build-graph" / "dockerfile-checks"
    assert not kept.exists() or not list(kept.iterdir())


@pytest.mark.parametrize(
    "damaged",
    ['{"warnings": [1]}', "[" * 100_000, "\udcff"],
    ids=["not strings", "nested past the parser's limit", "not text"],
)
def test_a_damaged_or_hostile_memory_is_asked_again_without_a_traceback(
    training: PlannedTier, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damaged: str
) -> None:
    asked = answering(monkeypatch, 0, PASSED)
    check(training, tmp_path)
    kept = tmp_path / "xdg" / "build-graph" / "dockerfile-checks"
    for path in kept.iterdir():
        path.write_bytes(damaged.encode("utf-8", "surrogateescape"))
    assert check(training, tmp_path) is None
    assert len(asked) == 2


def test_a_pass_under_a_frontend_named_by_tag_is_not_remembered(
    training: PlannedTier, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`# syntax=docker/dockerfile:1` may name another frontend tomorrow; by digest it may not."""
    asked = answering(monkeypatch, 0, PASSED)
    moving = dataclasses.replace(
        training, dockerfile="# syntax=docker/dockerfile:1\n" + training.dockerfile
    )
    pinned = dataclasses.replace(
        training,
        dockerfile=f"# syntax=docker/dockerfile:1@sha256:{'a' * 64}\n" + training.dockerfile,
    )
    for tier in (moving, moving, pinned, pinned):
        assert check(tier, tmp_path) is None
    assert len(asked) == 3  # the moving one twice, the pinned one once


def test_whether_buildx_has_call_is_remembered_only_from_an_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    asked = answering(monkeypatch, 1, "")  # a CLI that could not start or answer in time
    command = ["docker", "buildx", "build"]
    assert dockerfile_checks._has_checks(command, "v0.29.1") is False
    assert dockerfile_checks._has_checks(command, "v0.29.1") is False
    assert len(asked) == 2  # asked again: no answer is not "no --call"
    monkeypatch.setattr(
        buildkit,
        "run",
        lambda command, timeout=30: subprocess.CompletedProcess(command, 0, "  --call string", ""),
    )
    assert dockerfile_checks._has_checks(command, "v0.29.1") is True
    kept = tmp_path / "xdg" / "build-graph" / "dockerfile-checks"
    [memo] = kept.glob("calls-*")
    memo.write_bytes(b"\xff\xfe")  # damaged: not text
    assert dockerfile_checks._has_checks(command, "v0.29.1") is True  # asked again, no traceback
