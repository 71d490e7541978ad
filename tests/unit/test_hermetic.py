"""`[stack] hermetic`: what it needs (an apt lock, no git sources), what it renders (a pip
step that installs the lock's wheels from files with no network), what it hashes (every
tier with a pip step gets another tag; the others keep theirs), and how a failed step is
named. Real builds: tests/integration/test_hermetic.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from build_graph.cli.main import main
from build_graph.docker.buildkit import failed_step, offline_hint
from build_graph.errors import BuildFailed, OptionError
from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from tests.helpers import MINIMAL, config_errors
from tests.unit.test_plan import quickstart_copy


def hermetic(manifest: Path) -> Path:
    text = manifest.read_text()
    manifest.write_text(text.replace('registry = "', 'hermetic = true\nregistry = "', 1))
    return manifest


def test_a_hermetic_stack_needs_its_system_packages_locked(tmp_path: Path) -> None:
    errors = config_errors(
        tmp_path, MINIMAL.replace('name = "demo"', 'name = "demo"\nhermetic = true')
    )
    assert len(errors) == 1 and errors[0].startswith("stack.hermetic: "), errors
    assert "[apt] lock = true" in errors[0]


def test_a_git_source_is_refused_by_its_key(tmp_path: Path) -> None:
    text = (
        MINIMAL.replace('name = "demo"', 'name = "demo"\nhermetic = true')
        + "\n[apt]\nlock = true\n"
        + '\n[tiers.tools]\nfrom = "debian:bookworm-slim"\ntemplate = "builder.Dockerfile.j2"\n'
        + '\n[tiers.ext]\nparent = "base"\ntemplate = "python-runtime.Dockerfile.j2"\n'
        + '[tiers.ext.compile]\nbuilder = "tools"\nscript = "s.sh.j2"\n'
        + 'sources = { lib = "https://github.com/example/lib.git@v1.0" }\n'
    )
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "s.sh.j2").write_text("true\n")
    errors = config_errors(tmp_path, text)
    assert [e.split(": ")[0] for e in errors] == ["tiers.ext.compile.sources.lib"], errors
    assert "no network" in errors[0] and "#sha256=" in errors[0]


def test_the_pip_step_installs_the_locks_files_with_no_network(tmp_path: Path) -> None:
    before = {t.key: t for t in plan(load(quickstart_copy(tmp_path / "a")))}
    after = {t.key: t for t in plan(load(hermetic(quickstart_copy(tmp_path / "b"))))}
    with_pip = [k for k, t in before.items() if "# Locked in " in t.dockerfile]
    assert with_pip, "the quickstart has no locked pip step"
    for key in with_pip:
        lines = after[key].dockerfile.split("# Locked in ", 1)[1].splitlines()[1:]
        ends = next(i for i, line in enumerate(lines) if not line.endswith("\\"))
        step = "\n".join(lines[: ends + 1])  # the RUN instruction after the comment
        assert "--mount=type=bind,source=pywheels,target=/tmp/pywheels --network=none" in step
        assert "--no-index --find-links /tmp/pywheels" in step and "--require-hashes" in step
        assert "id=pipconf" not in step  # no index to sign in to
        assert after[key].content_hash != before[key].content_hash, key
    # hermetic is a property of the pip steps: a tier with none, and no ancestor with one,
    # keeps its tag (none in the quickstart: every tier is below the builder's pip step)
    assert all(after[k].content_hash != before[k].content_hash for k in before)


# BuildKit's plain progress when a RUN step fails (buildx 0.29, the docker driver)
FAILED = """\
#9 [3/3] RUN python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9/')"
#9 0.311 urllib.error.URLError: <urlopen error [Errno 111] Connection refused>
#9 ERROR: process "/bin/sh -c python3 -c ..." did not complete successfully: exit code: 1
------
 > [3/3] RUN python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9/')":
------
Dockerfile:14
--------------------
  12 |     ENV PYTHONPATH=/workspace
  13 |     WORKDIR /workspace
  14 | >>> RUN python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9/')"
  15 |     LABEL a=b
--------------------
ERROR: failed to solve: process "/bin/sh -c python3 -c ..." did not complete successfully
"""


def test_a_failed_step_is_named_with_its_line() -> None:
    step = failed_step(FAILED.splitlines())
    assert step is not None and step.startswith('`RUN python3 -c "import urllib.request;')
    assert step.endswith("(Dockerfile:14)")
    hint = offline_hint("training", FAILED.splitlines())
    assert "of training ran with no network ([stack] hermetic = true)" in hint
    assert failed_step(["#5 ERROR: failed to read dockerfile"]) is None
    assert "a step of training ran with no network" in offline_hint("training", ["no step"])


def test_fetch_names_an_unknown_tier_and_refuses_a_stale_lock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = quickstart_copy(tmp_path)
    assert main(["fetch", "nosuch", "--manifest", str(manifest)]) == OptionError.exit_code
    assert "no tier named nosuch in " in capsys.readouterr().err
    # a new pip: the builder's Python lock no longer answers images.toml, so what to fetch
    # is not known (nothing is fetched for that tier, no index is asked), and it says so
    manifest.write_text(manifest.read_text().replace('pip = "26.3"', 'pip = "26.4"'))
    assert main(["fetch", "builder", "--manifest", str(manifest)]) == BuildFailed.exit_code
    said = capsys.readouterr()
    assert "builder: a lock is missing or stale" in said.err
    assert "run `python -m build_graph lock" in said.err
    assert "the team's store: " in said.out
