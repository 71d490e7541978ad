"""`python -m build_graph check`: passes on every shipped manifest, fails clearly on bad ones."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from build_graph.errors import EXIT_CONFIG
from tests.helpers import REPO, write_manifest

MANIFESTS = sorted([REPO / "images.toml", *REPO.glob("examples/*/images.toml")])


def run_check(manifest: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "build_graph", "check", "--manifest", str(manifest)],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda p: p.parent.name)
def test_check_passes_on_every_shipped_manifest(manifest: Path) -> None:
    result = run_check(manifest)
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith("ok")


def test_examples_cover_the_promised_setups() -> None:
    names = {p.parent.name for p in MANIFESTS}
    assert {"quickstart", "ngc", "pip-wheel", "ci-parity"} <= names


def test_check_fails_with_every_error_and_no_traceback(tmp_path: Path) -> None:
    manifest = write_manifest(
        tmp_path,
        """
        [stack]
        name = "x"
        registry = "127.0.0.1:5000/x"
        [versions]
        python = "3.11"
        [tiers.base]
        from = "debian:bookworm-slim"
        template = "python-runtime.Dockerfile.j2"
        [tiers.training]
        parent = "bse"
        template = "training.Dockerfile.j2"
        contxt = ["x"]
        """,
    )
    result = run_check(manifest)
    assert result.returncode == EXIT_CONFIG
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert (
        f"error: {manifest}: tiers.training.contxt: unknown key (did you mean 'context'?)" in lines
    )
    # Structural errors come first; the parent check runs once the file is well-formed.
    assert len(lines) == 1


def test_template_error_is_a_clean_failure(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "t.j2").write_text("FROM {{ nothing_here }}\n")
    manifest = write_manifest(
        tmp_path,
        """
        [stack]
        name = "x"
        registry = "127.0.0.1:5000/x"
        [versions]
        python = "3.11"
        [tiers.base]
        from = "debian:bookworm-slim"
        template = "t.j2"
        """,
    )
    result = run_check(manifest)
    assert result.returncode == EXIT_CONFIG
    assert "Traceback" not in result.stderr
    assert "t.j2:1" in result.stderr and "nothing_here" in result.stderr
