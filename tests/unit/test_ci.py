"""`python -m build_graph ci --github`: the workflow parses, and its jobs are the tier graph."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from build_graph.cli import main as cli
from build_graph.cli.ci import job_id
from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from tests.helpers import MINIMAL, REPO, write_manifest
from tests.helpers import doit_command as doit_here


@pytest.mark.parametrize(
    "manifest", [REPO / "images.toml", REPO / "examples" / "quickstart" / "images.toml"]
)
def test_the_workflow_parses_and_its_job_graph_is_the_tier_graph(
    manifest: Path, tmp_path: Path
) -> None:
    out = tmp_path / "images.yml"
    assert (
        cli.main(
            [
                "ci",
                "--github",
                "--manifest",
                str(manifest),
                "--output",
                str(out),
                "--gpu-runs-on",
                "self-hosted",
                "h100",
            ]
        )
        == 0
    )
    workflow = yaml.safe_load(out.read_text())
    assert set(workflow["on"]) == {"push", "workflow_dispatch"}
    jobs = workflow["jobs"]
    planned = plan(load(manifest))
    graph = {
        job_id(t.key): {job_id(k) for k in (t.parent_key, t.builder_key) if k} for t in planned
    }
    assert {name: set(job.get("needs", [])) for name, job in jobs.items()} == graph
    for tier in planned:
        job = jobs[job_id(tier.key)]
        assert job["steps"][-1]["run"].endswith(f" promote:{tier.key}")
    # The shipped stack promises device code with verify.gpu = "required": those tiers'
    # jobs run where a GPU is; the quickstart promises none.
    on_gpu = {name for name, job in jobs.items() if job["runs-on"] == ["self-hosted", "h100"]}
    if manifest == REPO / "images.toml":
        assert on_gpu and on_gpu < set(jobs)
    else:
        assert on_gpu == set()


SHIPPED = sorted([REPO / "images.toml", *REPO.glob("examples/*/images.toml")])


def _tool(name: str) -> str:
    """A checker from the test extras, beside this interpreter (offline: no network)."""
    path = Path(sys.executable).parent / name
    assert path.is_file(), f"{name}: pip install -e '.[test]'"
    return str(path)


@pytest.mark.parametrize("manifest", SHIPPED, ids=lambda p: p.parent.name)
def test_the_workflow_is_valid_for_github_and_clean_under_zizmor(
    manifest: Path, tmp_path: Path
) -> None:
    assert_valid_for_github(manifest, tmp_path)


def assert_valid_for_github(manifest: Path, repo: Path) -> None:
    """The workflow written to `repo`/.github/workflows passes GitHub's schema and zizmor.
    With the login step: its secret reaches the step as an environment variable only."""
    workflow = repo / ".github" / "workflows" / "images.yml"
    workflow.parent.mkdir(parents=True)
    assert (
        cli.main(
            [
                "ci",
                "--github",
                "--manifest",
                str(manifest),
                "--output",
                str(workflow),
                "--login-secret",
                "REGISTRY_KEY",
            ]
        )
        == 0
    )
    checked_as_github_checks(workflow, repo)


def checked_as_github_checks(workflow: Path, repo: Path) -> None:
    """`workflow` passes GitHub's schema, and zizmor finds nothing in `repo`."""
    schema = subprocess.run(
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(workflow)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert schema.returncode == 0, schema.stdout + schema.stderr
    lint = subprocess.run(
        [_tool("zizmor"), "--offline", "--no-progress", str(repo)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "No findings to report" in lint.stdout + lint.stderr


def test_a_registry_login_uses_the_secret_through_the_environment(tmp_path: Path) -> None:
    out = tmp_path / "images.yml"
    assert (
        cli.main(
            [
                "ci",
                "--github",
                "--manifest",
                str(REPO / "images.toml"),
                "--output",
                str(out),
                "--login-secret",
                "AR_KEY",
                "--login-user",
                "_json_key",
            ]
        )
        == 0
    )
    host = load(REPO / "images.toml").registry.split("/")[0]
    for job in yaml.safe_load(out.read_text())["jobs"].values():
        login, setup = job["steps"][1], job["steps"][2]
        assert login["name"] == f"log in to {host}"
        assert login["env"] == {
            "DOCKER_CONFIG": "${{ runner.temp }}/docker-config",
            "REGISTRY_USER": "_json_key",
            "REGISTRY_TOKEN": "${{ secrets.AR_KEY }}",
        }
        assert "${{" not in login["run"] and f"docker login {host} " in login["run"]
        assert "--password-stdin" in login["run"]
        assert setup["name"] == "set up build-graph"
        # The token lives in the job's temp folder (emptied after the job), for the login
        # and the doit step alike: never in a self-hosted runner's ~/.docker/config.json.
        config = "${{ runner.temp }}/docker-config"
        assert job["steps"][3]["env"] == {"DOCKER_CONFIG": config}


@pytest.mark.parametrize(
    "option",
    [
        ["--login-secret", "1BAD"],
        ["--login-secret", "X }} ${{ github.token"],
        ["--login-secret", "OK", "--login-user", "a b"],
    ],
)
def test_a_login_option_that_could_change_the_workflow_is_refused(
    option: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "images.yml"
    assert (
        cli.main(
            [
                "ci",
                "--github",
                "--manifest",
                str(REPO / "images.toml"),
                "--output",
                str(out),
                *option,
            ]
        )
        == 2
    )
    assert not out.exists() and "error: --login-" in capsys.readouterr().err


def test_a_fresh_runner_installs_this_version_unless_told_otherwise(tmp_path: Path) -> None:
    from importlib import metadata

    out = tmp_path / "images.yml"
    manifest = str(REPO / "examples" / "quickstart" / "images.toml")
    assert cli.main(["ci", "--github", "--manifest", manifest, "--output", str(out)]) == 0
    [setup] = {job["steps"][1]["run"] for job in yaml.safe_load(out.read_text())["jobs"].values()}
    assert f"pip install -q 'build-graph=={metadata.version('build-graph')}'" in setup
    assert "scripts/" not in setup  # a team's repository has none of ours
    assert (
        cli.main(
            [
                "ci",
                "--github",
                "--manifest",
                manifest,
                "--output",
                str(out),
                "--setup",
                "scripts/bootstrap.sh",
            ]
        )
        == 0
    )
    jobs = yaml.safe_load(out.read_text())["jobs"].values()
    assert {job["steps"][1]["run"] for job in jobs} == {"scripts/bootstrap.sh"}


@pytest.mark.parametrize(
    ("engine", "option"),
    [
        ("--cloudbuild", ["--login-secret", "K"]),
        ("--cloudbuild", ["--login-user", "u"]),
        ("--github", ["--step-image", "example.com/x:1"]),
        ("--github", ["--machine-type", "E2"]),
        ("--github", ["--service-account", "projects/p/serviceAccounts/a@b"]),
    ],
)
def test_an_option_of_the_other_engine_is_refused_not_dropped(
    engine: str, option: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ci.yml"
    assert (
        cli.main(
            ["ci", engine, "--manifest", str(REPO / "images.toml"), "--output", str(out), *option]
        )
        == 2
    )
    assert not out.exists() and f"{option[0]}: an option for" in capsys.readouterr().err


def test_the_set_up_says_when_the_runners_python_is_too_old(tmp_path: Path) -> None:
    """The default set-up, run in bash with a python3 that reports 3.10: one clear line."""
    from build_graph.cli.ci import setup_command

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text('#!/bin/sh\n[ "$1" = -V ] && echo "Python 3.10.12"\nexit 1\n')
    (fake / "python3").chmod(0o755)
    result = subprocess.run(
        ["/bin/bash", "-c", setup_command()],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": f"{fake}:/usr/bin:/bin"},
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "build-graph needs Python >= 3.11 on the runner; python3 here is Python 3.10.12"
    )


# A tier built per platform: a job per platform image, then one promote job per tier.
TWO = '["linux/amd64", "linux/arm64"]'
QUICKSTART_TIERS = ["builder", "fastext", "base", "training", "runner"]


def two_platform_quickstart(tmp_path: Path) -> Path:
    """The quickstart with `platforms = ["linux/amd64", "linux/arm64"]` in [stack], from
    the two-platform seed (a local-only image serves one platform: refused), pinned."""
    folder = tmp_path / "quickstart"
    shutil.copytree(
        REPO / "examples" / "quickstart", folder, ignore=shutil.ignore_patterns("build")
    )
    manifest = folder / "images.toml"
    registry = 'registry = "127.0.0.1:5000/quickstart"\n'
    text = manifest.read_text()
    assert registry in text
    text = text.replace(registry, f"{registry}platforms = {TWO}\n", 1)
    manifest.write_text(
        text.replace('"debian:{debian}-slim"', '"127.0.0.1:5000/seed/debian:{debian}-slim"')
    )
    (folder / "images.lock").write_text(
        '[from]\n"127.0.0.1:5000/seed/debian:bookworm-slim" = "sha256:' + "1" * 64 + '"\n'
    )
    return manifest


def workflow_of(manifest: Path, tmp_path: Path, *extra: str) -> dict[str, Any]:
    out = tmp_path / "images.yml"
    assert (
        cli.main(["ci", "--github", "--manifest", str(manifest), "--output", str(out), *extra]) == 0
    )
    jobs: dict[str, Any] = yaml.safe_load(out.read_text())["jobs"]
    return jobs


def doit_command(manifest: Path, target: str) -> str:
    return f".venv/bin/doit {shlex.quote(f'manifest={manifest}')} {target}"


def test_a_two_platform_stack_has_a_job_per_image_and_a_promote_job_per_tier(
    tmp_path: Path,
) -> None:
    manifest = two_platform_quickstart(tmp_path)
    jobs = workflow_of(manifest, tmp_path)
    assert list(jobs) == [
        job for tier in QUICKSTART_TIERS for job in (f"{tier}-amd64", f"{tier}-arm64", tier)
    ]
    # A platform image waits for its parent's and builder's images of its platform only
    # (it builds on the parent's hash tag, which that job pushed); a tier's promote waits
    # for all its platforms and for its parent's promote.
    assert {job: spec.get("needs") for job, spec in jobs.items()} == {
        "builder-amd64": None,
        "builder-arm64": None,
        "builder": ["builder-amd64", "builder-arm64"],
        "fastext-amd64": ["builder-amd64"],
        "fastext-arm64": ["builder-arm64"],
        "fastext": ["fastext-amd64", "fastext-arm64"],
        "base-amd64": ["fastext-amd64"],
        "base-arm64": ["fastext-arm64"],
        "base": ["base-amd64", "base-arm64", "fastext"],
        "training-amd64": ["base-amd64"],
        "training-arm64": ["base-arm64"],
        "training": ["training-amd64", "training-arm64", "base"],
        "runner-amd64": ["training-amd64"],
        "runner-arm64": ["training-arm64"],
        "runner": ["runner-amd64", "runner-arm64", "training"],
    }
    for tier in QUICKSTART_TIERS:
        for arch, labels in (("amd64", ["ubuntu-latest"]), ("arm64", ["ubuntu-24.04-arm"])):
            job = jobs[f"{tier}-{arch}"]
            assert job["name"] == f"{tier}/{arch}" and job["runs-on"] == labels
            assert job["steps"][-1]["run"] == doit_command(manifest, f"{tier}/{arch}")
            assert job["steps"][-1]["name"] == f"build, push, verify {tier}/{arch}"
        promote = jobs[tier]
        assert promote["name"] == tier and promote["runs-on"] == ["ubuntu-latest"]
        assert promote["steps"][-1]["run"] == doit_command(manifest, f"promote:{tier}")
    custom = workflow_of(
        manifest, tmp_path, "--runs-on", "x86", "--arm64-runs-on", "self-hosted", "arm"
    )
    assert {job: spec["runs-on"] for job, spec in custom.items()} == {
        job: (["self-hosted", "arm"] if job.endswith("-arm64") else ["x86"]) for job in custom
    }


def test_every_doit_target_of_the_workflow_and_the_cloud_build_is_a_task(tmp_path: Path) -> None:
    """What `doit list --all` shows for the stack, through dodo.py: `promote:base/arm64`
    does not exist, so no job may run it."""
    manifest = two_platform_quickstart(tmp_path)
    jobs = workflow_of(manifest, tmp_path)
    targets = [job["steps"][-1]["run"].split()[-1] for job in jobs.values()]
    build = tmp_path / "cloudbuild.yaml"
    assert (
        cli.main(["ci", "--cloudbuild", "--manifest", str(manifest), "--output", str(build)]) == 0
    )
    steps = yaml.safe_load(build.read_text())["steps"]
    step_targets = [
        step["args"][-1].split()[-1]
        for step in steps
        if step["args"][-1].startswith(".venv/bin/doit ")
    ]
    planned = plan(load(manifest))
    expected = {*(t.key for t in planned), *(f"promote:{t.group_key}" for t in planned)}
    assert set(targets) == set(step_targets) == expected
    assert len(targets) == len(step_targets) == len(expected)  # each once
    listed = subprocess.run(
        doit_here(manifest, "list", "--all"),
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        timeout=120,
    )
    tasks = {line.split()[0] for line in listed.stdout.splitlines() if line.strip()}
    assert expected <= tasks, expected - tasks
    assert "promote:base/arm64" not in tasks


def test_arm64_images_that_need_a_gpu_go_to_arm_gpu_runners(tmp_path: Path) -> None:
    manifest = write_manifest(
        tmp_path,
        MINIMAL.replace(
            'registry = "127.0.0.1:5000/demo"',
            f'registry = "127.0.0.1:5000/demo"\nplatforms = {TWO}',
        )
        + '\n[gpu]\narch_list = ["9.0"]\n',
    )
    jobs = workflow_of(manifest, tmp_path, "--gpu-runs-on", "self-hosted", "h100")
    assert {job: spec["runs-on"] for job, spec in jobs.items()} == {
        "base-amd64": ["self-hosted", "h100"],
        "base-arm64": ["self-hosted", "linux", "ARM64", "gpu"],  # no hosted Arm GPU runner
        # promote verifies nothing itself: the platform jobs stored their reports
        "base": ["ubuntu-latest"],
    }
    jobs = workflow_of(manifest, tmp_path, "--arm64-gpu-runs-on", "self-hosted", "gh200")
    assert jobs["base-arm64"]["runs-on"] == ["self-hosted", "gh200"]


def test_a_host_only_tier_beside_a_per_platform_one_keeps_its_one_job(tmp_path: Path) -> None:
    manifest = write_manifest(
        tmp_path,
        MINIMAL
        + f"""
[tiers.multi]
from = "debian:bookworm-slim"
template = "python-runtime.Dockerfile.j2"
platforms = {TWO}
""",
    )
    jobs = workflow_of(manifest, tmp_path)
    assert list(jobs) == ["base", "multi-amd64", "multi-arm64", "multi"]
    assert jobs["base"]["name"] == "base" and "needs" not in jobs["base"]
    assert jobs["base"]["steps"][-1] == {
        "name": "build, push, verify, promote base",
        "run": doit_command(manifest, "promote:base"),
    }
    assert jobs["multi"]["needs"] == ["multi-amd64", "multi-arm64"]


def test_the_two_platform_workflow_is_valid_for_github_and_clean_under_zizmor(
    tmp_path: Path,
) -> None:
    assert_valid_for_github(two_platform_quickstart(tmp_path), tmp_path / "repo")


@pytest.mark.parametrize("option", ["--arm64-runs-on", "--arm64-gpu-runs-on"])
def test_the_arm64_runner_options_are_githubs_only(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ci.yml"
    assert (
        cli.main(
            [
                "ci",
                "--cloudbuild",
                "--manifest",
                str(REPO / "images.toml"),
                "--output",
                str(out),
                option,
                "arm",
            ]
        )
        == 2
    )
    assert not out.exists() and f"{option}: an option for GitHub" in capsys.readouterr().err


def test_a_tier_whose_job_id_another_platform_job_takes_is_refused(tmp_path: Path) -> None:
    manifest = two_platform_quickstart(tmp_path)
    manifest.write_text(
        manifest.read_text() + '\n[tiers.base-arm64]\nparent = "base"\n'
        'template = "training.Dockerfile.j2"\nplatforms = ["linux/amd64"]\n'
    )
    out = tmp_path / "images.yml"
    assert cli.main(["ci", "--github", "--manifest", str(manifest), "--output", str(out)]) == 2
    assert not out.exists()
