"""The registry as the truth, side by side with the records-only code it replaced.

For each side (OLD: a git ref of build-graph before the change, default the last commit
with records as the truth; NEW: this checkout), on its own copy of the quickstart pushed to
its own repositories of the local registry:
  - no-op: the median of 5 plain `doit` runs with everything up to date;
  - fresh runner: a copy of the folder without build/ (doit database, records, reports);
  - new tag: that fresh runner with a human tag added to fastext, i.e. promote only.
Each figure comes with the Docker daemon's events during the run (pulls, containers).
Run after scripts/quickstart.sh (the daemon has the base images; BuildKit caches warm).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO

OLD_REF = "693b996"  # records-only truth (push.json/verify.json/promote.json), pull to promote


def events_since(since: int) -> dict[str, int]:
    out = subprocess.run(
        [
            "docker",
            "events",
            "--since",
            str(since),
            "--until",
            str(int(time.time()) + 1),
            "--format",
            "{{.Type}} {{.Action}}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    return {
        "pulls": sum(1 for e in out if e == "image pull"),
        "containers": sum(1 for e in out if e == "container create"),
    }


def run(code: Path, manifest: Path) -> tuple[float, dict[str, int]]:
    time.sleep(1.1)  # docker counts events by the second
    since = int(time.time())
    env = {**os.environ, "PYTHONPATH": str(code)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "doit", "-f", str(code / "dodo.py"), f"manifest={manifest}"],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{code}: doit failed:\n{(done.stdout + done.stderr)[-3000:]}")
    return elapsed, events_since(since)


def noop(code: Path, manifest: Path, runs: int = 5) -> float:
    env = {**os.environ, "PYTHONPATH": str(code)}
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "doit", "-f", str(code / "dodo.py"), f"manifest={manifest}"],
            cwd=code,
            env=env,
            capture_output=True,
            check=True,
        )
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def side(name: str, code: Path, folder: Path, registry: str) -> dict[str, str]:
    stack = folder / name / "quickstart"
    shutil.copytree(code / "examples" / "quickstart", stack, ignore=shutil.ignore_patterns("build"))
    manifest = stack / "images.toml"
    text = manifest.read_text().replace(
        'registry = "127.0.0.1:5000/quickstart"',
        f'registry = "{registry}/bench-{name}-{os.getpid()}"',
    )
    manifest.write_text(text)
    run(code, manifest)  # the first, full run: not measured
    figures = {"no-op (median of 5)": f"{noop(code, manifest):.3f} s"}
    fresh = folder / name / "fresh"
    shutil.copytree(stack, fresh, ignore=shutil.ignore_patterns("build"))
    elapsed, seen = run(code, fresh / "images.toml")
    figures["fresh runner"] = (
        f"{elapsed:.2f} s, {seen['pulls']} pulls, {seen['containers']} containers"
    )
    tagged = folder / name / "tagged"
    shutil.copytree(stack, tagged, ignore=shutil.ignore_patterns("build"))
    path = tagged / "images.toml"
    path.write_text(
        path.read_text().replace('tags = ["py{python}"]', 'tags = ["py{python}", "bench"]')
    )
    elapsed, seen = run(code, path)
    figures["fresh runner, one new tag"] = (
        f"{elapsed:.2f} s, {seen['pulls']} pulls, {seen['containers']} containers"
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--old", default=OLD_REF, help="git ref of the old code")
    parser.add_argument("--registry", default="127.0.0.1:5000")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="registry-truth-") as tmp:
        folder = Path(tmp)
        old = folder / "old-code"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(old), args.old],
            check=True,
            capture_output=True,
        )
        try:
            results = {
                "old": side("old", old, folder, args.registry),
                "new": side("new", REPO, folder, args.registry),
            }
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)],
                check=False,
                capture_output=True,
            )
    print(f"quickstart, 5 tiers, registry {args.registry} (old = {args.old}, new = this checkout)")
    for figure in results["new"]:
        print(f"  {figure:<28} old: {results['old'][figure]:<34} new: {results['new'][figure]}")


if __name__ == "__main__":
    main()
