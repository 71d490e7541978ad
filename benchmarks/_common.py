"""Shared helpers for the benchmark scripts (timing subprocesses, printing figures)."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def doit_command(manifest: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "doit",
        "-f",
        str(REPO / "dodo.py"),
        f"manifest={manifest}",
        *args,
    ]


def timed(command: list[str], runs: int, cwd: Path = REPO) -> tuple[float, str]:
    """Median wall time of `runs` runs, and the last run's combined output."""
    times, output = [], ""
    for _ in range(runs):
        started = time.perf_counter()
        result = subprocess.run(
            command, capture_output=True, text=True, cwd=cwd, env=os.environ.copy(), check=False
        )
        times.append(time.perf_counter() - started)
        output = result.stdout + result.stderr
        if result.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{output[-3000:]}")
    return statistics.median(times), output


def stack_folder(folder: Path, name: str, registry: str, template: str) -> str:
    """Write the stack's one template (templates/bench.Dockerfile.j2); return the manifest's
    [stack] and [versions] tables for a generated stack."""
    (folder / "templates").mkdir(parents=True)
    (folder / "templates" / "bench.Dockerfile.j2").write_text(template)
    return stack_head(name, registry)


def stack_head(name: str, registry: str, stack_keys: str = "") -> str:
    """[stack] (with `stack_keys` lines) and [versions] of a generated stack."""
    return (
        f'[stack]\nname = "{name}"\n{stack_keys}registry = "{registry}/{name}"\n'
        '[versions]\npython = "3.11"\n'
    )


def nonce_stack(
    folder: Path, name: str, registry: str, template: str, body: str, stack_keys: str = ""
) -> Path:
    """A one-tier stack in `folder` (its template written the first time): images.toml is
    the head and `body`, the tier with its NONCE build arg (nonce_rebuild writes it again
    with another)."""
    if not (folder / "templates").exists():
        stack_folder(folder, name, registry, template)
    path = folder / "images.toml"
    path.write_text(stack_head(name, registry, stack_keys) + body)
    return path


def stack_args(description: str | None) -> argparse.Namespace:
    """--registry and --root-image (the quickstart's fastext image) of a generated stack."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--registry", default="127.0.0.1:5000")
    parser.add_argument("--root-image", default="127.0.0.1:5000/quickstart/fastext:latest")
    return parser.parse_args()


def engine_up(env: dict[str, str], store: str) -> str:
    """Purge and start scripts/engine.sh's engine (ENGINE_INSTANCE and the rest in `env`)
    in `store`; its DOCKER_HOST."""
    engine = str(REPO / "scripts" / "engine.sh")
    subprocess.run([engine, "purge"], env=env, check=True, capture_output=True)
    subprocess.run([engine, "up", store], env=env, check=True, capture_output=True)
    exports = subprocess.run([engine, "env"], env=env, check=True, text=True, capture_output=True)
    prefix = "export DOCKER_HOST="
    return next(
        line[len(prefix) :] for line in exports.stdout.splitlines() if line.startswith(prefix)
    )


def count(output: str, prefix: str) -> int:
    return sum(1 for line in output.splitlines() if line.startswith(prefix))


def lock_seconds(path: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "build_graph", "lock", "--manifest", str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"lock failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def nonce_rebuild(write: Callable[[str], Path], task: str) -> float:
    """Seconds of `doit TASK` after a new NONCE build arg: the stack written by `write(nonce)`
    is built once to warm its caches, then written with another nonce (which invalidates
    every step after the ARG, as a changed package list would) and built again, timed."""
    stamp = time.strftime("%H%M%S")
    timed(doit_command(write(f"warm-{stamp}"), task), 1)
    seconds, _ = timed(doit_command(write(f"timed-{stamp}"), task), 1)
    return seconds
