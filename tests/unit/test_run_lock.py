"""Two doit runs of one stack never share a doit database."""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

from build_graph.errors import EXIT_ENVIRONMENT
from build_graph.run.run_lock import doit_command
from tests.helpers import MINIMAL, REPO, write_manifest


def test_doit_command_is_the_first_plain_argument() -> None:
    assert doit_command(["doit", "manifest=x.toml", "list", "--all"]) == "list"
    assert doit_command(["doit", "-f", "dodo.py", "info", "build:x"]) == "info"
    assert doit_command(["doit", "-f", "dodo.py"]) == "run"
    assert doit_command(["doit", "manifest=x.toml"]) == "run"
    assert doit_command(["doit", "build:base"]) == "build:base"


def doit(manifest: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py"), f"manifest={manifest}", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_a_second_run_is_refused_while_the_first_holds_the_lock(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, MINIMAL)
    # Pinned already: rendering then asks no registry and no Docker daemon (a unit test).
    (tmp_path / "images.lock").write_text('[from]\n"debian:bookworm-slim" = "local"\n')
    (tmp_path / "build").mkdir()
    with (tmp_path / "build" / ".doit.lock").open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 4242\n")
        held.flush()
        refused = doit(manifest, "render")
        listed = doit(manifest, "list")  # read-only commands still work
    assert refused.returncode == EXIT_ENVIRONMENT
    assert "another doit run (pid 4242) is using" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert listed.returncode == 0 and "base" in listed.stdout.split()
    rendered = doit(manifest, "render")  # the lock is free again
    assert rendered.returncode == 0, rendered.stderr
    assert (tmp_path / "build" / "default" / "base" / "Dockerfile").is_file()
