"""Runs a person can read, and runs in parallel.

Quiet (BUILD_GRAPH_VERBOSE unset): one line per task, each task's output in its log file,
on failure the message, the log's path and its last lines. `doit -n 2` on two variants that
share most images: both converge, nothing is built twice on the next run.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from tests.helpers import summary_rows
from tests.support.registry import Registry
from tests.support.workspace import Workspace, built, make_workspace

pytestmark = pytest.mark.integration
QUIET = {"BUILD_GRAPH_VERBOSE": "0"}


@pytest.fixture
def ws(tmp_path: pytest.TempPathFactory, registry: Registry) -> Iterator[Workspace]:
    yield make_workspace(tmp_path, registry)  # type: ignore[arg-type]


def test_a_quiet_run_is_one_line_per_task_with_logs_and_a_failure_tail(ws: Workspace) -> None:
    ws.edit('packages = { teamlib = ">=0.1" }', 'packages = { teamlib = ">=9" }')
    result = ws.doit("--continue", env=QUIET)
    text = result.stdout + result.stderr
    assert result.returncode == 1
    assert "+ docker build" not in text and "Step 1/" not in text  # in the log files
    lines = text.splitlines()
    assert len(lines) < 150, len(lines)  # a verbose first run prints about 1,100
    assert any(line.startswith("ok    build:builder  ") and line.endswith(" s") for line in lines)
    assert any(line.startswith("ok    verify:fastext  ") for line in lines)
    assert any(line.startswith("FAIL  verify:base  ") for line in lines)
    assert "FAIL package teamlib: expected >=9; got 0.1.0" in [line.strip() for line in lines]
    log = ws.root / "build" / "default" / "base" / "logs" / "verify.log"
    assert f"      log: {log} (last " in text and "lines before the error):" in text
    assert any(line.startswith("      | ") for line in lines)  # the log's last lines
    assert "+ docker run" in log.read_text()
    build_log = (ws.root / "build" / "default" / "builder" / "logs" / "build.log").read_text()
    assert "+ docker build" in build_log


def test_two_variants_in_parallel_converge(ws: Workspace) -> None:
    """Variants a and b share every tier's hash but the leaf's: with -n 2, tasks of both
    build, push and promote the same tags at once, and still agree with the registry."""
    (ws.root / "templates" / "leaf.Dockerfile.j2").write_text(
        '{% import "_macros.j2" as m %}\nFROM {{ base_image }}\n'
        '{{ m.build_args(tier.build_args) }}\nRUN echo "$V" > /variant\n'
    )
    ws.edit('tags = ["py{python}"]', 'tags = ["py{python}-{variant}"]')  # unique per variant
    ws.manifest.write_text(
        ws.manifest.read_text()
        + (
            '\n[tiers.leaf]\nparent = "base"\ntemplate = "leaf.Dockerfile.j2"\n'
            'build_args = { V = "{marker}" }\n'
            '\n[variants.a]\nversions = { marker = "1" }\n'
            '[variants.b]\nversions = { marker = "2" }\n'
        )
    )
    first = ws.doit("-n", "2", "leaf")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "latest" in ws.registry.tags("quickstart/leaf")  # variant a is the default
    images = [t for t in ws.registry.tags("quickstart/leaf") if not t.startswith("sha256-")]
    assert len(images) == 3, images  # two hash tags and latest (sha256-*: verify reports)
    for variant in ("a", "b"):
        assert (ws.root / "build" / variant / "leaf" / "verify.json").is_file()
        assert (ws.root / "build" / variant / "leaf" / "logs" / "build.log").is_file()
    again = ws.doit("-n", "2", "leaf")
    assert again.returncode == 0 and built(again) == []


COUNTING = """\
#!/usr/bin/env bash
set -euo pipefail
for i in 1 2 3; do echo "[$i/3] Building CXX object part$i.o"; sleep 1.5; done
echo built > {{ paths.out }}/result.txt
"""


def test_a_long_compile_shows_files_done_and_the_hit_rate_so_far(ws: Workspace) -> None:
    (ws.root / "templates" / "counting.sh.j2").write_text(COUNTING)
    ws.manifest.write_text(
        ws.manifest.read_text()
        + (
            '\n[tiers.counted]\nfrom = "debian:{debian}-slim"\n'
            'template = "python-runtime.Dockerfile.j2"\n'
            'compile = { builder = "builder", script = "counting.sh.j2", outputs = "*.txt" }\n'
        )
    )
    result = ws.doit("compile:counted", env={**QUIET, "BUILD_GRAPH_PROGRESS_S": "1"})
    text = result.stdout + result.stderr
    assert result.returncode == 0, text[-3000:]
    progress = [line for line in text.splitlines() if line.startswith("..    compile:counted")]
    assert progress, text[-3000:]
    assert any(
        " 2/3 files (67%), ccache 0 hits / 0 misses" in line
        or " 3/3 files (100%), ccache 0 hits / 0 misses" in line
        for line in progress
    )
    assert (ws.root / "build" / "default" / "counted" / "wheels" / "result.txt").is_file()


LISTING = """\
#!/usr/bin/env bash
set -euo pipefail
cd {{ paths.src }} && find . -type f | sort > {{ paths.out }}/seen.txt
"""


def test_a_compile_sees_exactly_the_files_its_hash_was_made_of(ws: Workspace) -> None:
    """The compile hash and the compile container share one file list: a .dockerignore'd
    file changes neither; .git and .env never reach the compile; a hashed file does."""
    (ws.root / "templates" / "listing.sh.j2").write_text(LISTING)
    ws.manifest.write_text(
        ws.manifest.read_text()
        + (
            '\n[tiers.listed]\nfrom = "debian:{debian}-slim"\n'
            'template = "python-runtime.Dockerfile.j2"\n'
            'compile = { builder = "builder", script = "listing.sh.j2", outputs = "*.txt", '
            'sources = { fastext = "src/fastext" } }\n'
        )
    )
    source = ws.root / "src" / "fastext"

    def compile_hash() -> str | None:
        return next(t.compile_hash for t in plan(load(ws.manifest)) if t.key == "listed")

    before = compile_hash()
    (source / ".dockerignore").write_text("notes.md\n")
    (source / "notes.md").write_text("left out\n")
    (source / ".git").mkdir()
    (source / ".git" / "config").write_text("[remote]\n")
    (source / ".env").write_text("TOKEN=secret\n")
    assert compile_hash() == before
    (source / "extra.h").write_text("#pragma once\n")
    assert compile_hash() != before
    result = ws.doit("compile:listed", env=QUIET)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    seen = (ws.root / "build" / "default" / "listed" / "wheels" / "seen.txt").read_text()
    files = {line.removeprefix("./") for line in seen.split()}
    expected = {
        f"fastext/{p.relative_to(source).as_posix()}"
        for p in source.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    expected -= {"fastext/notes.md", "fastext/.env", "fastext/.git/config", "fastext/.dockerignore"}
    assert files == expected
    assert "fastext/extra.h" in files and "fastext/setup.py" in files


def test_the_run_summary_says_what_ran_the_cache_verify_digest_and_tags(
    ws: Workspace, tmp_path: Path
) -> None:
    """A first run, then one whose compile inputs changed but not its C++: the summary
    (build/summary.md, and appended to $GITHUB_STEP_SUMMARY as GitHub reads it) shows the
    untouched builder up to date with its digest, and fastext recompiled from the cache,
    rebuilt, verified and promoted, with the digest `latest` names now."""
    step = tmp_path / "step-summary.md"
    env = {**QUIET, "GITHUB_STEP_SUMMARY": str(step)}
    # A compile input of this test's own (a file the C++ build ignores): the first run
    # compiles whatever other tests of the module pushed to the shared registry.
    notes = ws.root / "src" / "fastext" / "NOTES.txt"
    notes.write_text(f"this test's compile: {uuid.uuid4()}\n")
    first = ws.doit(env=env)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    notes.write_text("changes the compile's inputs again\n")
    second = ws.doit(env=env)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]

    summary = ws.root / "build" / "summary.md"
    text = summary.read_text()
    assert text.startswith("### build-graph: quickstart (")
    assert step.read_text().count("### build-graph: quickstart (") == 2
    assert step.read_text().endswith(text + "\n")  # the second run's, appended last
    found = summary_rows(summary.read_text())
    assert set(found) == {"builder", "fastext", "base", "training", "runner"}
    builder, fastext = found["builder"], found["fastext"]
    assert (builder["ran"], builder["time"]) == ("nothing (up to date)", "-")
    assert builder["digest"] == ws.registry.digest("quickstart/builder", "latest")
    assert fastext["ran"] == "compile, build, push, verify, promote", fastext
    cache = re.fullmatch(r"(\d+) hits / 0 misses \(100%\)", fastext["compiler cache"])
    assert cache and int(cache[1]) > 0, fastext
    # where the time went: the image's bytes and seconds, what the push moved, and the pull
    # (none: verify ran on the engine that built it)
    built = r"[\d.]+ [MG]B image \(\d gzip layers\) in [\d.]+ s"
    assert re.fullmatch(built, fastext["built"]), fastext
    sent = r"[\d.]+ [kM]B sent \(\d+ of \d+ blobs; .*\) in [\d.]+ s"
    assert re.fullmatch(sent, fastext["pushed"]), fastext
    assert fastext["pulled"] == "none (the engine here has it)", fastext
    assert fastext["verify"].startswith("passed (") and "GPU not applicable" in fastext["verify"]
    assert fastext["digest"] == ws.registry.digest("quickstart/fastext", "latest")
    assert "latest" in fastext["tags moved"].split(", ")
    kept = json.loads((ws.root / "build" / "default" / "fastext" / "figures.json").read_text())
    assert set(kept) == {"build", "push"} and kept["build"]["image_bytes"] > 1e6, kept
    assert kept["push"]["bytes_sent"] > 0 and kept["push"]["blobs"]["sent"] >= 1, kept
