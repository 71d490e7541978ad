"""Workspaces: copies of a stack pointed at a loopback registry, the `doit` runs made in
them, and what a run did, read from its own record (build/summary.md), never from the
wording of its log."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_graph.errors import EXIT_CONFIG, EXIT_ENVIRONMENT
from tests.helpers import REPO, doit_command, summary_rows
from tests.support.registry import Registry

SUMMARY = Path("build") / "summary.md"
STORE = Path("build") / "ccache-store"  # the quickstart's compiler cache: [cache] url unset

# The compiler cache the session's workspaces share (tests/integration/conftest.py sets it):
# a workspace starts with the archives an earlier one saved, as a team's runner starts with
# its bucket. Each module's first quickstart compiled fastext cold before (about 40 s of a
# worker, in some thirty modules); the modules that test compiling itself start cold
# (`make_workspace(..., cold=True)`) or name a bucket of their own.
shared_compiler_cache: Path | None = None


class Run(subprocess.CompletedProcess[str]):
    """A finished `doit` run and the record it wrote: `summary` is build/summary.md's table
    as this run left it (tier -> cells), None when this run wrote none."""

    summary: dict[str, dict[str, str]] | None

    def __init__(
        self, done: subprocess.CompletedProcess[str], summary: dict[str, dict[str, str]] | None
    ) -> None:
        super().__init__(done.args, done.returncode, done.stdout, done.stderr)
        self.summary = summary


def run_doit(
    root: Path, manifest: Path, args: tuple[str, ...], env: dict[str, str], timeout: float
) -> Run:
    """`doit` on `manifest` from the repository root (where pyproject.toml registers `doit
    list`/`doit info` in tiers), within `timeout` seconds (under the test's own 900). The
    summary a previous run left is set aside first, so a run that writes none is seen as
    such, and put back if this run wrote none."""
    summary = root / SUMMARY
    before = summary.with_name("summary.md.before")
    if summary.exists():
        summary.replace(before)
    try:
        done = stopped_gently(
            doit_command(manifest, *args),
            {**os.environ, "BUILD_GRAPH_VERBOSE": "1", **env},
            timeout,
        )
    finally:
        wrote = summary.exists()
        if before.exists():
            if wrote:
                before.unlink()
            else:
                before.replace(summary)
    print(done.stdout[-20000:], done.stderr[-20000:])
    return Run(done, summary_rows(summary.read_text()) if wrote else None)


def stopped_gently(
    command: list[str], env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """`command` run to its end from the repository root; on its timeout, or when the test
    is stopped (pytest-timeout, Ctrl-C), it gets SIGTERM first, as CI stops a job, so its
    compile containers are removed and its cache saved, then SIGKILL a minute later."""
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:
            proc.terminate()
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
            raise
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


@dataclass
class Workspace:
    """A copy of a stack (the quickstart's, unless told) pushed to a private registry."""

    root: Path
    registry: Registry
    shares_cache: bool = False  # starts from, and adds to, the session's compiler cache
    runs: int = 0

    @property
    def manifest(self) -> Path:
        return self.root / "images.toml"

    def doit(self, *args: str, env: dict[str, str] | None = None, timeout: float = 840) -> Run:
        # Verbose: some tests read the build's own steps from the output (quiet runs:
        # test_runs); what ran is read from the run's record (built(), pushed()).
        shared = shared_compiler_cache if self.shares_cache else None
        if shared is not None and self.runs == 0:
            _copy_archives(shared, self.root / STORE)
        self.runs += 1
        try:
            return run_doit(self.root, self.manifest, args, env or {}, timeout)
        finally:
            if shared is not None:
                _copy_archives(self.root / STORE, shared)

    def edit(self, old: str, new: str) -> None:
        text = self.manifest.read_text()
        assert old in text, old
        self.manifest.write_text(text.replace(old, new, 1))


def _copy_archives(source: Path, target: Path) -> None:
    """The compiler cache archives (`stack/tier/variant-<toolchain>.tar.zst`) of `source`
    that `target` lacks, each put in place whole (two workers share the session's)."""
    for archive in sorted(source.glob("*/*/*.tar.zst")) if source.is_dir() else ():
        kept = target / archive.relative_to(source)
        if kept.exists():
            continue
        kept.parent.mkdir(parents=True, exist_ok=True)
        spare = kept.with_name(f".{kept.name}.{os.getpid()}")
        shutil.copyfile(archive, spare)
        os.replace(spare, kept)


def make_workspace(folder: Path, registry: Registry, cold: bool = False) -> Workspace:
    """The quickstart in `folder`, pushed to `registry`; its compiler cache starts from the
    session's (`cold`: empty, for tests of compiling itself)."""
    root = folder / "quickstart"
    shutil.copytree(
        REPO / "examples" / "quickstart", root, ignore=shutil.ignore_patterns("build", "gen")
    )
    ws = Workspace(root, registry, shares_cache=not cold)
    ws.edit('registry = "127.0.0.1:5000/quickstart"', f'registry = "{registry.address}/quickstart"')
    # Two kernels instead of eight: the tests exercise the mechanism, not the cache's value.
    ws.edit(
        'sources = { fastext = "src/fastext" } }',
        'sources = { fastext = "src/fastext" }, env = { FASTEXT_KERNELS = "2" } }',
    )
    return ws


def recorded(root: Path, done: subprocess.CompletedProcess[str]) -> Run:
    """A run started by hand (concurrent runs) with the summary it left in `root`."""
    summary = root / SUMMARY
    return Run(done, summary_rows(summary.read_text()) if summary.exists() else None)


def ran(run: Run, stage: str) -> list[str]:
    """Tier keys whose `stage` ran (and finished) in `run`, from the run's summary."""
    if run.summary is None:
        # A run refused before any task was even checked (a config or environment error,
        # exit 2 or 3, said in our own 'error:' line) writes no record and built nothing;
        # any other run without a record (doit's own exit 3 for a task name it does not
        # know, a crash) did something nobody can read.
        said = run.stdout + run.stderr
        refused = any(line.startswith("error: ") for line in run.stderr.splitlines())
        if (
            run.returncode in (EXIT_CONFIG, EXIT_ENVIRONMENT)
            and refused
            and "Traceback" not in said
        ):
            return []
        raise AssertionError(
            f"the run wrote no summary (exit {run.returncode}): what it did is not known\n"
            + (run.stdout + run.stderr)[-3000:]
        )
    return [unescaped(tier) for tier, row in run.summary.items() if stage in stages_ran(row["ran"])]


def stages_ran(cell: str) -> list[str]:
    """The stages a summary row's 'ran' cell says finished: 'render, build FAILED; not run:
    push' -> ['render']; 'not run: render, build' -> []; 'nothing (up to date)' -> []."""
    done = cell.split("not run:", 1)[0].rstrip("; ").strip()
    if not done or done.startswith("nothing"):
        return []
    return [s for s in done.split(", ") if not s.endswith(" FAILED")]


def unescaped(key: str) -> str:
    """A tier key as it is, from its table cell (summary.cell escapes markup and HTML)."""
    return html.unescape(re.sub(r"\\(.)", r"\1", key))


def built(run: Run) -> list[str]:
    """Tier keys whose build stage ran (and finished) in `run`, from the run's summary."""
    return ran(run, "build")


def pushed(run: Run) -> list[str]:
    """Tier keys whose push stage ran (and finished) in `run`, from the run's summary."""
    return ran(run, "push")


def image_as_stored_and_pushed(ws: Workspace, tier: str) -> tuple[Any, list[bytes]]:
    """A tier's local image, and every text it travels as: its config and history in the
    daemon, its manifest and config blob in the registry (to search for leaked secrets)."""
    import docker

    client = docker.from_env()
    repo = f"{ws.registry.address}/quickstart/{tier}"
    image = client.images.list(repo)[0]
    history = client.api.history(image.id)  # type: ignore[no-untyped-call]
    tag = next(t for t in image.tags if t.startswith(repo)).rsplit(":", 1)[1]
    texts = [json.dumps(image.attrs).encode(), json.dumps(history).encode()]
    return image, texts + ws.registry.manifest_and_config(f"quickstart/{tier}", tag)


def output_of(image: str, command: list[str], platform: str | None = None) -> str:
    """What `command` prints inside `image`, read back as a file from the stopped container:
    docker 20.10 can return a container's logs before the last of them is written (an empty
    `containers.run(...)` result was seen in CI), a file in its filesystem is complete."""
    from build_graph.docker import containers

    script = ["sh", "-c", '"$@" > /tmp/.output 2>&1', "sh", *command]
    with containers.container(image, script, entrypoint=[], platform=platform) as box:
        status = box.wait()
        written = containers.read_file(box, "/tmp/.output")
    assert written is not None, f"{image}: {command} left no output file"
    text = written.decode()
    assert status["StatusCode"] == 0, text
    return text


def statuses(ws: Workspace) -> dict[str, str]:
    """`doit list --status`: tier -> what a run would do to it."""
    result = ws.doit("list", "--status")
    assert result.returncode == 0, result.stderr
    found = {}
    for line in result.stdout.splitlines():
        match = re.match(r"^(.*?)\s{2,}(\S+)\s+(?:on|from) ", line)
        assert match, line
        found[match[2]] = match[1]
    return found
