"""Pre-flight: what would fail hours into a run fails it in seconds, before anything is
built or compiled, in one line per problem naming the fix (exit 3).

Each run is the quickstart against an empty registry of its own (tests/support/
oci_registry.py's, on loopback), so every tier is still to build and nothing the suite's
engine or registry holds lets a stage pass on someone else's work. The faults are real:
a registry whose token service grants pull and nothing else (a read-only robot account),
a compiler cache bucket the GCS emulator does not have with `[cache] required = true`, and
a template whose Dockerfile BuildKit's own parser refuses.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from build_graph.errors import EXIT_ENVIRONMENT
from tests.helpers import REPO
from tests.support.gcs import GcsEmulator
from tests.support.oci_registry import OciRegistry, running_registry
from tests.support.registry import Registry
from tests.support.workspace import Run, Workspace, make_workspace, ran

pytestmark = pytest.mark.integration
TIERS = ("builder", "fastext", "base", "training", "runner")


@pytest.fixture
def empty_registry() -> Iterator[OciRegistry]:
    with running_registry() as registry:
        yield registry


def workspace(tmp_path: Path, registry: OciRegistry) -> Workspace:
    # make_workspace wants the stack's registry address: a stand-in, never started.
    return make_workspace(tmp_path, Registry(tmp_path / "unused", registry.port))


def refused_before_anything(run: Run) -> list[str]:
    """The run failed in pre-flight: exit 3, nothing built, compiled or pushed; its lines."""
    said = run.stdout + run.stderr
    assert run.returncode == EXIT_ENVIRONMENT, said[-3000:]
    assert "Traceback" not in said
    for stage in ("compile", "build", "push"):
        assert ran(run, stage) == [], (stage, run.summary)
    assert "pre-flight: this run would fail later, so nothing was built:" in said, said[-3000:]
    return said.splitlines()


def test_a_read_only_robot_fails_the_run_before_any_build(
    tmp_path: Path, empty_registry: OciRegistry
) -> None:
    empty_registry.token_auth = empty_registry.pull_only_tokens = True
    run = workspace(tmp_path, empty_registry).doit()
    lines = refused_before_anything(run)
    for tier in TIERS:  # every repository the run would push to, each named
        assert any(
            f"opening an upload to quickstart/{tier} (push rights)" in line and "401" in line
            for line in lines
        ), (tier, lines[-40:])
    assert empty_registry.uploads == {}  # each session asked about was cancelled
    assert not any(r.method == "PUT" for r in empty_registry.requests)


def test_a_required_cache_in_a_bucket_that_is_not_there_fails_before_the_builder_is_built(
    tmp_path: Path, empty_registry: OciRegistry, gcs: GcsEmulator
) -> None:
    ws = workspace(tmp_path, empty_registry)
    ws.edit('max_size = "2G"', 'url = "gs://no-such-bucket/team"\nrequired = true\nmax_size = "2G"')
    run = ws.doit(env={"STORAGE_EMULATOR_HOST": gcs.url})
    lines = refused_before_anything(run)
    assert any(
        "compiler cache of fastext: gs://no-such-bucket/team cannot be written" in line
        and "required = true" in line
        for line in lines
    ), lines[-40:]
    # Not required: the run compiles, writes nothing to the store up front, and the summary
    # says why the compile ran cold.
    ws.edit("required = true\n", "")
    again = ws.doit("compile:fastext", env={"STORAGE_EMULATOR_HOST": gcs.url})
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    assert again.summary is not None
    cell = again.summary["fastext"]["compiler cache"]
    assert "cold: gs://no-such-bucket/team unavailable" in cell, cell


def test_a_dockerfile_buildkit_refuses_fails_the_run_before_the_first_tier_is_built(
    tmp_path: Path, empty_registry: OciRegistry
) -> None:
    ws = workspace(tmp_path, empty_registry)
    # The team's own copy of the template (the stack's templates/ come first), with a typo.
    shipped = REPO / "templates" / "training.Dockerfile.j2"
    (ws.root / "templates" / shipped.name).write_text(shipped.read_text() + "\nRUNN echo a typo\n")
    run = ws.doit()
    lines = refused_before_anything(run)
    said = [line for line in lines if "fails BuildKit's checks" in line]
    assert said, lines[-40:]
    for line in said:  # the failed task's output and the run's error line
        assert "training: its Dockerfile fails BuildKit's checks" in line, line
        assert "unknown instruction: RUNN" in line and "training.Dockerfile.j2" in line, line
    # the tiers below it, the first to be built among them, were checked and passed
    assert not any(f"{t}: its Dockerfile" in x for t in ("builder", "fastext") for x in lines)
