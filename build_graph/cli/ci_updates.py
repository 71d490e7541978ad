"""`python -m build_graph ci --github --updates`: a GitHub Actions workflow that moves every
pin on a schedule and proposes the moves as one pull request, so a team reviews one change
a week instead of taking a month of updates with an unrelated edit.

Each Monday (or by hand) one job runs `python -m build_graph lock --update`: every pin that
images.toml allows moves (`from` digests, git commits, Python and apt locks), each move
printed as `package old -> new`, `(security update)` where the archive served it from its
security archive. Nothing changed: the job ends. Otherwise the moved lock files are
committed to the branch `build-graph/updates` and a pull request opened (or its text
refreshed) with the moves as its body; merging it is the edit the next `doit` rebuilds
exactly the affected tiers for. A pull request opened with the workflow's GITHUB_TOKEN
starts no other workflow (GitHub's rule); `--updates-token-secret` names a token (a
GitHub App's or a fine-grained PAT) whose pull requests do. Every scalar is a JSON string
(valid YAML), as in ci.py.
"""

from __future__ import annotations

import json
import shlex

from build_graph.cli.ci import first_steps
from build_graph.log import shown
from build_graph.manifest.model import Stack

BRANCH = "build-graph/updates"
CRON = "17 5 * * 1"  # Mondays, 05:17 UTC: off the hour, as GitHub asks of scheduled jobs


def updates_workflow(
    stack: Stack,
    manifest: str,
    runs_on: list[str],
    *,
    setup: str | None = None,
    token_secret: str = "GITHUB_TOKEN",
) -> str:
    q = json.dumps
    where = shlex.quote(manifest)
    moves = "$RUNNER_TEMP/moves.txt"
    propose = "; ".join(
        [
            "set -eu",
            'if git diff --quiet; then echo "no pin moved"; exit 0; fi',
            'git config user.name "build-graph"',
            'git config user.email "build-graph@users.noreply.github.com"',
            f"git switch -C {BRANCH}",
            "git commit -q -a -m 'Move pins: python -m build_graph lock --update'",
            'git push --force "https://x-access-token:${GH_TOKEN}@github.com/'
            f'${{GITHUB_REPOSITORY}}.git" HEAD:refs/heads/{BRANCH}',
            f'gh pr edit {BRANCH} --body-file "{moves}" || gh pr create --head {BRANCH} '
            f"--title 'Pins moved by python -m build_graph lock --update' "
            f'--body-file "{moves}"',
        ]
    )
    lines = [
        f"# Written by `python -m build_graph ci --github --updates` from {shown(manifest)}.",
        "# Weekly: move every pin images.toml allows and propose the moves as one pull",
        "# request (branch build-graph/updates); merging it rebuilds the affected tiers.",
        f"name: {q('pin updates: ' + stack.name)}",
        '"on":',
        "  schedule:",
        f"    - cron: {q(CRON)}",
        "  workflow_dispatch: {}",
        "# Only this job writes: the lock files to its branch, and its pull request.",
        "permissions:",
        f"  contents: {q('write')}",
        f"  pull-requests: {q('write')}",
        "jobs:",
        "  update-pins:",
        f"    name: {q('move pins')}",
        f"    runs-on: [{', '.join(q(label) for label in runs_on)}]",
        "    steps:",
        *first_steps(setup),
        f"      - name: {q('move every pin')}",
        "        run: "
        + q(f'.venv/bin/python -m build_graph lock --update --manifest {where} | tee "{moves}"'),
        f"      - name: {q('propose the moves')}",
        "        env:",
        f"          GH_TOKEN: {q('${{ secrets.' + token_secret + ' }}')}",
        f"        run: {q(propose)}",
    ]
    return "\n".join(lines) + "\n"
