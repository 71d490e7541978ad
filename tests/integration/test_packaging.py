"""The wheel works on its own: templates ship as package data, a plain install plans.

Built with pip (as a user would, build isolation included), installed without `-e` into a
fresh virtualenv outside the repository, then run from a folder that is not the checkout:
the quickstart copied there is checked, planned and rendered with the shipped templates,
and its hashes are the ones the checkout computes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from tests.helpers import REPO

pytestmark = pytest.mark.integration


def run(*command: str | Path, cwd: Path) -> str:
    done = subprocess.run(
        [str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"{command}: {done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the wheel installed (not editable); its dependencies come
    from this interpreter's site-packages through a .pth line (no download of them)."""
    work = tmp_path_factory.mktemp("wheel")
    # Built from a copy of what the wheel is made of: setuptools leaves build/lib behind in
    # the tree it builds, and a stale build/lib is a known way to ship old modules.
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    for name in ("build_graph", "templates", "examples"):
        shutil.copytree(
            REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "build")
        )
    run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "-q",
        "--no-deps",
        "-w",
        work / "dist",
        source,
        cwd=work,
    )
    wheel = next((work / "dist").glob("build_graph-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "build_graph/templates/_macros.j2" in names, names
    assert "build_graph/verify/in_image/probe.py" in names
    assert "build_graph/examples/quickstart/images.toml" in names  # what `init` writes
    assert "build_graph/examples/quickstart/src/fastext/.gitignore" in names  # in its hash
    assert not [n for n in names if "/build/" in n]  # no run's state
    assert "build_graph/gpu/torch_releases.json" in names  # check's torch partner facts
    run(sys.executable, "-m", "venv", "--without-pip", work / "venv", cwd=work)
    python = work / "venv" / "bin" / "python"
    site = Path(
        run(
            python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=work
        ).strip()
    )
    with zipfile.ZipFile(wheel) as archive:  # what `pip install --no-deps wheel` does
        archive.extractall(site)
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python


def test_the_wheel_ships_templates_and_plans_a_stack_outside_the_checkout(
    installed: Path, tmp_path: Path
) -> None:
    stack = tmp_path / "team"
    shutil.copytree(REPO / "examples" / "quickstart", stack, ignore=shutil.ignore_patterns("build"))
    where = run(
        installed,
        "-c",
        "import build_graph, build_graph.manifest.resolve as r; "
        "print(build_graph.__file__); print(r.shipped_templates())",
        cwd=tmp_path,
    )
    package, templates = where.split()
    assert not Path(package).is_relative_to(REPO), package  # the installed copy, not ours
    assert Path(templates) == Path(package).parent / "templates"
    assert "ok" in run(
        installed, "-m", "build_graph", "check", "--manifest", stack / "images.toml", cwd=tmp_path
    )
    rows = json.loads(
        run(
            installed,
            "-m",
            "build_graph",
            "plan",
            "--offline",
            "--json",
            "--manifest",
            stack / "images.toml",
            cwd=tmp_path,
        )
    )
    ours = {p.key: p.content_hash for p in plan(load(stack / "images.toml"))}
    assert {row["key"]: row["hash"] for row in rows} == ours
    run(
        installed,
        "-c",
        "import sys; from build_graph.plan.cache import load_plan; "
        "from build_graph.stages.render import render; "
        "[render(t) for t in load_plan(__import__('pathlib').Path(sys.argv[1]))[1]]",
        stack / "images.toml",
        cwd=tmp_path,
    )
    rendered = sorted(
        p.relative_to(stack).as_posix() for p in (stack / "build").rglob("Dockerfile")
    )
    assert rendered == sorted(f"build/default/{key}/Dockerfile" for key in ours)


def test_init_from_the_wheel_writes_a_stack_that_doit_lists(
    installed: Path, tmp_path: Path
) -> None:
    """A team's repository in three commands: init, then doit there (no checkout, no
    daemon asked: planning needs none)."""
    repo = tmp_path / "team-repo"
    repo.mkdir()
    out = run(installed, "-m", "build_graph", "init", "--from", "quickstart", cwd=repo)
    assert f"wrote {Path('images.toml')}" in out, out
    assert "ok" in run(installed, "-m", "build_graph", "check", cwd=repo)
    listed = run(installed, "-m", "doit", "list", cwd=repo)
    assert [line.split()[0] for line in listed.splitlines()] == [
        "builder",
        "fastext",
        "base",
        "training",
        "runner",
    ], listed
    # The templates rendered are the installed package's, found beside it.
    where = run(
        installed, "-c", "import build_graph.cli.init as i; print(i.shipped_examples())", cwd=repo
    ).strip()
    assert not Path(where).is_relative_to(REPO), where
