"""`python -m build_graph ci --cloudbuild`: Cloud Build's own API types accept the config
strictly, for every shipped stack, and its steps are the plan in order (issue 20)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.cloud.devtools.cloudbuild_v1.types import Build
from google.protobuf import json_format

from build_graph.cli import main as cli
from build_graph.cli.ci import ci_jobs
from build_graph.cli.cloudbuild import BINFMT_IMAGE, EMULATION_STEP, step_id
from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from tests.helpers import REPO, write_manifest

SHIPPED = sorted([REPO / "images.toml", *REPO.glob("examples/*/images.toml")])


def config(tmp_path: Path, manifest: Path, *extra: str) -> tuple[dict[str, Any], Any]:
    out = tmp_path / "cloudbuild.yaml"
    assert (
        cli.main(["ci", "--cloudbuild", "--manifest", str(manifest), "--output", str(out), *extra])
        == 0
    )
    data = yaml.safe_load(out.read_text())
    # Strict: an unknown field or a wrong type is an error (ignore_unknown_fields=False).
    return data, json_format.ParseDict(data, Build.pb(Build()))


@pytest.mark.parametrize("manifest", SHIPPED, ids=lambda p: p.parent.name)
def test_cloud_build_parses_the_config_and_its_steps_are_the_plan(
    manifest: Path, tmp_path: Path
) -> None:
    data, build = config(tmp_path, manifest)
    planned = plan(load(manifest))
    jobs = ci_jobs(planned)
    ids = [step.id for step in build.steps]
    # Stacks with linux/arm64 images (examples/cuda/grace.toml) register QEMU first.
    emulation = [EMULATION_STEP] if any(t.platform == "linux/arm64" for t in planned) else []
    assert ids == ["set up build-graph", *emulation, *(step_id(j.key) for j in jobs)]
    for before, step in zip(ids, build.steps[1:], strict=False):
        assert list(step.wait_for) == [before]  # one doit run per stack at a time
    for job, step in zip(jobs, build.steps[1 + len(emulation) :], strict=True):
        assert step.args[-1].endswith(f" {job.target}")
        assert job.target in {f"promote:{t.group_key}" for t in planned} | {
            t.key for t in planned if t.platform
        }
    host = load(manifest).registry.split("/")[0]
    assert f"gcloud auth configure-docker {host} --quiet" in build.steps[0].args[-1]
    assert build.timeout.seconds == 12 * 3600
    assert data["options"]["machineType"] == "E2_HIGHCPU_32"
    assert build.options.logging == build.options.LoggingMode.CLOUD_LOGGING_ONLY


def test_machine_timeout_and_service_account(tmp_path: Path) -> None:
    account = "projects/seeds/serviceAccounts/builder@seeds.iam.gserviceaccount.com"
    _, build = config(
        tmp_path,
        REPO / "images.toml",
        "--machine-type",
        "E2_HIGHCPU_8",
        "--timeout-hours",
        "20",
        "--service-account",
        account,
    )
    assert build.options.machine_type == build.options.MachineType.E2_HIGHCPU_8
    assert build.timeout.seconds == 20 * 3600 and build.service_account == account


def test_a_machine_type_cloud_build_does_not_know_is_refused_by_its_types(tmp_path: Path) -> None:
    with pytest.raises(json_format.ParseError):
        config(tmp_path, REPO / "images.toml", "--machine-type", "E2_HUGE")


def test_a_cache_that_would_not_outlive_the_build_is_noted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = write_manifest(
        tmp_path,
        """
        [stack]
        name = "demo"
        registry = "us-docker.pkg.dev/seeds/gpu"

        [versions]
        python = "3.11"

        [cache]
        url = "gs://seeds-ccache/demo"

        [tiers.base]
        from = "debian:bookworm-slim"
        template = "python-runtime.Dockerfile.j2"
        """,
    )
    _, build = config(tmp_path, manifest)
    assert "gcloud auth configure-docker us-docker.pkg.dev --quiet" in build.steps[0].args[-1]
    assert "note:" not in capsys.readouterr().err
    config(tmp_path, REPO / "examples" / "quickstart" / "images.toml")
    assert "every Cloud Build starts with a cold compiler cache" in capsys.readouterr().err


def test_a_manifest_path_reaches_the_shell_as_one_quoted_word(tmp_path: Path) -> None:
    """A path is the user's text, but `$`, `;` or a space in it must not run anything."""
    from build_graph.cli.ci import github_workflow
    from build_graph.cli.cloudbuild import cloudbuild_config
    from build_graph.manifest.load import load
    from build_graph.plan.plan import plan

    stack = load(REPO / "examples" / "quickstart" / "images.toml")
    planned = plan(stack)
    hostile = "we$ird;x y/images.toml"
    workflow = github_workflow(stack, planned, hostile, ["ubuntu-latest"], ["gpu"])
    assert "'manifest=we$ird;x y/images.toml'" in workflow
    build = cloudbuild_config(stack, planned, hostile)
    assert "'manifest=we$$ird;x y/images.toml'" in build


def test_the_first_step_names_a_tool_the_step_image_lacks(tmp_path: Path) -> None:
    """The set-up step's shell, as Cloud Build runs it ($$ substituted to $), on a PATH
    without docker: it stops at once and says which tool and which option."""
    _, build = config(
        tmp_path,
        REPO / "examples" / "quickstart" / "images.toml",
        "--step-image",
        "example.com/tools:1",
    )
    assert {step.name for step in build.steps} == {"example.com/tools:1"}
    script = build.steps[0].args[-1].replace("$$", "$")
    empty = tmp_path / "bin"
    empty.mkdir()
    result = subprocess.run(
        ["/bin/bash", "-c", script],
        env={"PATH": str(empty)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "the step image has no docker: pass ci --step-image IMAGE" in result.stderr


def test_a_two_platform_stack_registers_emulation_then_builds_each_platform_then_promotes(
    tmp_path: Path,
) -> None:
    """Cloud Build's workers are amd64: arm64 images build under QEMU, registered by a
    privileged binfmt step before any image; each tier: its platforms, then its promote."""
    manifest = write_manifest(
        tmp_path,
        """
        [stack]
        name = "demo"
        registry = "us-docker.pkg.dev/seeds/gpu"
        platforms = ["linux/amd64", "linux/arm64"]

        [versions]
        python = "3.11"

        [tiers.base]
        from = "debian:bookworm-slim"
        template = "python-runtime.Dockerfile.j2"

        [tiers.app]
        parent = "base"
        template = "training.Dockerfile.j2"
        """,
    )
    _, build = config(tmp_path, manifest)
    ids = [step.id for step in build.steps]
    assert ids == [
        "set up build-graph",
        EMULATION_STEP,
        "base-amd64",
        "base-arm64",
        "base",
        "app-amd64",
        "app-arm64",
        "app",
    ]
    emulation = build.steps[1]
    assert emulation.entrypoint == "docker"
    assert list(emulation.args) == [
        "run",
        "--privileged",
        "--rm",
        BINFMT_IMAGE,
        "--install",
        "arm64",
    ]
    assert [list(step.wait_for) for step in build.steps[1:]] == [[i] for i in ids[:-1]]
    assert [step.args[-1].split()[-1] for step in build.steps[2:]] == [
        "base/amd64",
        "base/arm64",
        "promote:base",
        "app/amd64",
        "app/arm64",
        "promote:app",
    ]
    # A stack of the build host's platform only has no emulation step.
    _, host_only = config(tmp_path, REPO / "examples" / "quickstart" / "images.toml")
    assert EMULATION_STEP not in {step.id for step in host_only.steps}
