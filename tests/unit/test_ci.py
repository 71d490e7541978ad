"""`python -m build_graph ci --github`: the workflow parses, and its jobs are the tier graph."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from build_graph.cli import main as cli
from build_graph.cli.ci import job_id
from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from tests.helpers import REPO


@pytest.mark.parametrize("manifest", [REPO / "images.toml",
                                      REPO / "examples" / "quickstart" / "images.toml"])
def test_the_workflow_parses_and_its_job_graph_is_the_tier_graph(
        manifest: Path, tmp_path: Path) -> None:
    out = tmp_path / "images.yml"
    assert cli.main(["ci", "--github", "--manifest", str(manifest), "--output", str(out),
                     "--gpu-runs-on", "self-hosted", "h100"]) == 0
    workflow = yaml.safe_load(out.read_text())
    assert set(workflow["on"]) == {"push", "workflow_dispatch"}
    jobs = workflow["jobs"]
    planned = plan(load(manifest))
    graph = {job_id(t.key): {job_id(k) for k in (t.parent_key, t.builder_key) if k}
             for t in planned}
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
def test_the_workflow_is_valid_for_github_and_clean_under_zizmor(manifest: Path,
                                                                 tmp_path: Path) -> None:
    workflow = tmp_path / ".github" / "workflows" / "images.yml"
    workflow.parent.mkdir(parents=True)
    # With the login step: its secret reaches the step as an environment variable only.
    assert cli.main(["ci", "--github", "--manifest", str(manifest), "--output",
                     str(workflow), "--login-secret", "REGISTRY_KEY"]) == 0
    schema = subprocess.run([_tool("check-jsonschema"), "--builtin-schema",
                             "vendor.github-workflows", str(workflow)],
                            capture_output=True, text=True, check=False)
    assert schema.returncode == 0, schema.stdout + schema.stderr
    lint = subprocess.run([_tool("zizmor"), "--offline", "--no-progress", str(tmp_path)],
                          capture_output=True, text=True, check=False)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "No findings to report" in lint.stdout + lint.stderr


def test_a_registry_login_uses_the_secret_through_the_environment(tmp_path: Path) -> None:
    out = tmp_path / "images.yml"
    assert cli.main(["ci", "--github", "--manifest", str(REPO / "images.toml"), "--output",
                     str(out), "--login-secret", "AR_KEY", "--login-user", "_json_key"]) == 0
    host = load(REPO / "images.toml").registry.split("/")[0]
    for job in yaml.safe_load(out.read_text())["jobs"].values():
        login, setup = job["steps"][1], job["steps"][2]
        assert login["name"] == f"log in to {host}"
        assert login["env"] == {"DOCKER_CONFIG": "${{ runner.temp }}/docker-config",
                                "REGISTRY_USER": "_json_key",
                                "REGISTRY_TOKEN": "${{ secrets.AR_KEY }}"}
        assert "${{" not in login["run"] and f"docker login {host} " in login["run"]
        assert "--password-stdin" in login["run"]
        assert setup["name"] == "set up build-graph"
        # The token lives in the job's temp folder (emptied after the job), for the login
        # and the doit step alike: never in a self-hosted runner's ~/.docker/config.json.
        config = "${{ runner.temp }}/docker-config"
        assert job["steps"][3]["env"] == {"DOCKER_CONFIG": config}


@pytest.mark.parametrize("option", [["--login-secret", "1BAD"],
                                    ["--login-secret", "X }} ${{ github.token"],
                                    ["--login-secret", "OK", "--login-user", "a b"]])
def test_a_login_option_that_could_change_the_workflow_is_refused(
        option: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "images.yml"
    assert cli.main(["ci", "--github", "--manifest", str(REPO / "images.toml"),
                     "--output", str(out), *option]) == 2
    assert not out.exists() and "error: --login-" in capsys.readouterr().err


def test_a_fresh_runner_installs_this_version_unless_told_otherwise(tmp_path: Path) -> None:
    from importlib import metadata

    out = tmp_path / "images.yml"
    manifest = str(REPO / "examples" / "quickstart" / "images.toml")
    assert cli.main(["ci", "--github", "--manifest", manifest, "--output", str(out)]) == 0
    [setup] = {job["steps"][1]["run"] for job in yaml.safe_load(out.read_text())["jobs"].values()}
    assert f"pip install -q 'build-graph=={metadata.version('build-graph')}'" in setup
    assert "scripts/" not in setup  # a team's repository has none of ours
    assert cli.main(["ci", "--github", "--manifest", manifest, "--output", str(out),
                     "--setup", "scripts/bootstrap.sh"]) == 0
    jobs = yaml.safe_load(out.read_text())["jobs"].values()
    assert {job["steps"][1]["run"] for job in jobs} == {"scripts/bootstrap.sh"}


@pytest.mark.parametrize(("engine", "option"), [
    ("--cloudbuild", ["--login-secret", "K"]), ("--cloudbuild", ["--login-user", "u"]),
    ("--github", ["--step-image", "example.com/x:1"]), ("--github", ["--machine-type", "E2"]),
    ("--github", ["--service-account", "projects/p/serviceAccounts/a@b"])])
def test_an_option_of_the_other_engine_is_refused_not_dropped(
        engine: str, option: list[str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ci.yml"
    assert cli.main(["ci", engine, "--manifest", str(REPO / "images.toml"), "--output",
                     str(out), *option]) == 2
    assert not out.exists() and f"{option[0]}: an option for" in capsys.readouterr().err


def test_the_set_up_says_when_the_runners_python_is_too_old(tmp_path: Path) -> None:
    """The default set-up, run in bash with a python3 that reports 3.10: one clear line."""
    from build_graph.cli.ci import setup_command

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text('#!/bin/sh\n[ "$1" = -V ] && echo "Python 3.10.12"\nexit 1\n')
    (fake / "python3").chmod(0o755)
    result = subprocess.run(["/bin/bash", "-c", setup_command()], capture_output=True,
                            text=True, check=False, env={"PATH": f"{fake}:/usr/bin:/bin"})
    assert result.returncode == 1
    assert result.stderr.strip() == ("build-graph needs Python >= 3.11 on the runner; python3 "
                                     "here is Python 3.10.12")
