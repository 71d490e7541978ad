"""Python locks resolved by the real uv against a package index on 127.0.0.1.

The index (tests/pypi_index.py) serves real wheels built around the metadata each test
gives it; releases appear between steps as they would on PyPI. No Docker: what is checked
is the lock (what a build installs) and the commands that move it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.helpers import REPO
from tests.pypi_index import Index, serving

STACK = """
[stack]
name = "locks"
registry = "127.0.0.1:5000/locks"

[versions]
python = "3.11"

[tiers.base]
from = "debian:bookworm-slim"
template = "python-runtime.Dockerfile.j2"
packages = [{packages}]

[tiers.app]
parent = "base"
template = "python-packages.Dockerfile.j2"
packages = ["d"]
"""


def release(name: str, version: str, *requires: str) -> tuple[str, dict[str, str]]:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    return version, {
        "path": f"/files/{name}-{version}-py3-none-any.whl",
        "metadata": "\n".join(lines) + "\n",
    }


def lock(folder: Path, index: Index, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "BUILD_GRAPH_PIP_INDEX_URL": f"{index.url}/simple",
        "UV_CACHE_DIR": str(folder / f"uv-cache-{len(index.requests)}"),  # fresh per step
    }
    return subprocess.run(
        [sys.executable, "-m", "build_graph", *args, "--manifest", str(folder / "images.toml")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def pins(folder: Path, tier: str) -> dict[str, str]:
    data = tomllib.loads((folder / "images.pylock" / f"{tier}.linux-amd64.toml").read_text())
    return {p["name"]: p["version"] for p in data["packages"]}


def write(folder: Path, packages: str) -> None:
    (folder / "images.toml").write_text(STACK.replace("{packages}", packages))
    (folder / "images.lock").write_text('[from]\n"debian:bookworm-slim" = "local"\n')


def test_a_bump_moves_that_package_and_nothing_else(tmp_path: Path) -> None:
    index = Index(
        {
            "a": dict([release("a", "1.0", "b>=1")]),
            "b": dict([release("b", "1.0")]),
            "c": dict([release("c", "1.0")]),
            "d": dict([release("d", "1.0", "b")]),
        }
    )
    with serving(index):
        write(tmp_path, '"a==1.0", "c"')
        done = lock(tmp_path, index, "lock")
        assert done.returncode == 0, done.stderr
        assert pins(tmp_path, "base") == {"a": "1.0", "b": "1.0", "c": "1.0"}
        # The child is resolved on its parent: b is the parent's, never installed twice
        assert pins(tmp_path, "app") == {"d": "1.0"}

        # Newer releases of everything appear; the team bumps a alone
        index.projects["a"].update([release("a", "1.1", "b>=1")])
        index.projects["b"].update([release("b", "2.0")])
        index.projects["c"].update([release("c", "1.1")])
        index.projects["d"].update([release("d", "1.1", "b")])
        write(tmp_path, '"a==1.1", "c"')
        stale = lock(tmp_path, index, "check", "--offline")
        assert stale.returncode == 2
        assert "tiers.base.packages" in stale.stderr and "now requirement a==1.1" in stale.stderr
        assert "python -m build_graph lock" in stale.stderr
        done = lock(tmp_path, index, "lock")
        assert done.returncode == 0, done.stderr
        assert "a 1.0 -> 1.1" in done.stderr
        assert pins(tmp_path, "base") == {"a": "1.1", "b": "1.0", "c": "1.0"}
        assert pins(tmp_path, "app") == {"d": "1.0"}  # the child's pins stay too

        # `outdated` says what `lock --update` would move, and writes nothing
        before = (tmp_path / "images.pylock" / "base.linux-amd64.toml").read_bytes()
        newer = lock(tmp_path, index, "outdated", "--no-from-tags")
        assert newer.returncode == 0, newer.stderr
        assert "Python pins that `lock --update` would move (2 locks asked):" in newer.stdout
        for line in (
            "base.linux-amd64.toml: b 1.0 -> 2.0",
            "base.linux-amd64.toml: c 1.0 -> 1.1",
            "-> python -m build_graph lock --update base",
            "app.linux-amd64.toml: d 1.0 -> 1.1",
        ):
            assert line in newer.stdout, newer.stdout
        assert "a 1.1 ->" not in newer.stdout  # images.toml holds a at 1.1
        assert (tmp_path / "images.pylock" / "base.linux-amd64.toml").read_bytes() == before

        # A package the tier does not hold is refused by name (uv would ignore it)
        typo = lock(tmp_path, index, "lock", "--update", "base", "cc")
        assert typo.returncode == 2
        said = "cc is in neither base's Python lock nor its apt lock (they hold: a, b, c)"
        assert said in typo.stderr, typo.stderr
        # One package moved on request; the rest stays
        done = lock(tmp_path, index, "lock", "--update", "base", "c")
        assert done.returncode == 0, done.stderr
        assert pins(tmp_path, "base") == {"a": "1.1", "b": "1.0", "c": "1.1"}
        assert lock(tmp_path, index, "check", "--offline").returncode == 0


def test_an_unsatisfiable_bump_names_the_tier_and_the_fix(tmp_path: Path) -> None:
    index = Index({"a": dict([release("a", "1.0")])})
    with serving(index):
        write(tmp_path, '"a==9.9"')
        done = lock(tmp_path, index, "lock")
    assert done.returncode == 2, done.stderr
    assert "base: no set of Python packages satisfies" in done.stderr
    assert "fix tiers.base.packages" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "images.pylock" / "base.linux-amd64.toml").exists()
