"""`python -m build_graph ci --github --updates`: a weekly workflow that moves every pin and
proposes the moves as one pull request; valid for GitHub, clean under zizmor, its options
GitHub's only."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from build_graph.cli import main as cli
from build_graph.cli.ci_updates import BRANCH, CRON
from tests.helpers import REPO
from tests.unit.test_ci import checked_as_github_checks

QUICKSTART = REPO / "examples" / "quickstart" / "images.toml"


def written(repo: Path, *extra: str) -> Path:
    workflow = repo / ".github" / "workflows" / "pin-updates.yml"
    workflow.parent.mkdir(parents=True, exist_ok=True)
    args = ["ci", "--github", "--updates", "--manifest", str(QUICKSTART), "--output", str(workflow)]
    assert cli.main([*args, *extra]) == 0
    return workflow


def test_the_updates_workflow_moves_every_pin_weekly_and_proposes_one_pull_request(
    tmp_path: Path,
) -> None:
    workflow = yaml.safe_load(written(tmp_path).read_text())
    assert workflow["on"]["schedule"] == [{"cron": CRON}] and "workflow_dispatch" in workflow["on"]
    assert workflow["permissions"] == {"contents": "write", "pull-requests": "write"}
    (job,) = workflow["jobs"].values()
    runs = [step.get("run", "") for step in job["steps"]]
    move = next(r for r in runs if "lock --update" in r)
    assert shlex.split(move)[:6] == [
        ".venv/bin/python",
        "-m",
        "build_graph",
        "lock",
        "--update",
        "--manifest",
    ]
    propose = runs[-1]
    assert propose.index("git diff --quiet") < propose.index("git push")  # no move: no PR
    assert f"HEAD:refs/heads/{BRANCH}" in propose and "gh pr create" in propose
    assert job["steps"][-1]["env"] == {"GH_TOKEN": "${{ secrets.GITHUB_TOKEN }}"}
    assert job["steps"][0]["with"] == {"persist-credentials": False}


def test_the_updates_workflow_is_valid_for_github_and_clean_under_zizmor(tmp_path: Path) -> None:
    workflow = written(tmp_path, "--updates-token-secret", "PIN_BOT_TOKEN")
    assert "${{ secrets.PIN_BOT_TOKEN }}" in workflow.read_text()
    checked_as_github_checks(workflow, tmp_path)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--cloudbuild", "--updates"], "--updates: an option for GitHub"),
        (["--github", "--updates-token-secret", "X"], "an option of --updates"),
        (["--github", "--updates", "--updates-token-secret", "no such"], "not a GitHub secret"),
    ],
)
def test_an_updates_option_out_of_place_is_refused(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["ci", *args, "--manifest", str(QUICKSTART)]) == 2
    assert said in capsys.readouterr().err
