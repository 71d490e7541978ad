"""Shared test helpers: inline manifests written to a temporary folder."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from build_graph.errors import ConfigError
from build_graph.manifest.expectation import Expectation
from build_graph.manifest.load import load
from build_graph.manifest.model import Stack

REPO = Path(__file__).resolve().parent.parent

# A small GPU tier's promises, for tests of the verifier's fingerprint and trust
WANT = Expectation(
    python="3.11",
    conda=False,
    single_python=True,
    pip_check=True,
    packages={},
    cuda="12.4",
    archs=["8.0"],
)

MINIMAL = """
[stack]
name = "demo"
registry = "127.0.0.1:5000/demo"

[versions]
python = "3.11"

[tiers.base]
from = "debian:bookworm-slim"
template = "python-runtime.Dockerfile.j2"
"""


def write_manifest(folder: Path, text: str) -> Path:
    path = folder / "images.toml"
    path.write_text(textwrap.dedent(text))
    return path


def load_text(folder: Path, text: str) -> Stack:
    return load(write_manifest(folder, text))


def config_errors(folder: Path, text: str) -> list[str]:
    """Every issue line of a manifest that must fail to load."""
    with pytest.raises(ConfigError) as caught:
        load_text(folder, text)
    return [f"{issue.key}: {issue.message}" for issue in caught.value.issues]


def one_error(folder: Path, text: str, key: str) -> str:
    """The message of the single issue at `key` (fails if there is not exactly one)."""
    matching = [e for e in config_errors(folder, text) if e.startswith(f"{key}: ")]
    assert len(matching) == 1, matching
    return matching[0]


def doit_command(manifest: Path, *args: str) -> list[str]:
    """The command line of `doit` on `manifest` with this checkout's dodo.py; run it from
    the repository root (where pyproject.toml registers the commands)."""
    return [
        sys.executable,
        "-m",
        "doit",
        "-f",
        str(REPO / "dodo.py"),
        f"manifest={manifest}",
        *args,
    ]


def doit(manifest: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`doit` on `manifest`, from the repository root (where pyproject.toml registers the
    commands); `list` without --status asks neither Docker nor the registry."""
    return subprocess.run(
        doit_command(manifest, *args),
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        timeout=120,
    )


def build_graph(
    manifest: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m build_graph ARGS --manifest MANIFEST` from the repository root, with
    `env` over this process's environment."""
    return subprocess.run(
        [sys.executable, "-m", "build_graph", *args, "--manifest", str(manifest)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def summary_rows(text: str) -> dict[str, dict[str, str]]:
    """The run summary's table (build/summary.md's text): tier -> its cells by column
    header ('ran', 'time', 'compiler cache', 'built', 'pushed', 'pulled', 'verify', ...)."""
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    headers = [c.strip() for c in lines[0].strip("|").split(" | ")]
    assert headers[0] == "tier", lines[0]
    return {
        cells[0]: dict(zip(headers, cells, strict=True))
        for line in lines[1:]
        for cells in [[c.strip() for c in line.strip("|").split(" | ")]]
    }
