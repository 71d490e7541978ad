"""docs/contributing.md's "What proves what" names, for each promise, the tests that fail
when it breaks: every module and test it names must exist, so moving or renaming a test
without moving its promise fails here, not in a reviewer's memory."""

from __future__ import annotations

import ast
import re

from tests.helpers import REPO

PAGE = REPO / "docs" / "contributing.md"


def named_tests() -> list[tuple[str, str | None]]:
    """(module path, test name or None) for every test the map's table cites; `::name`
    alone continues the module named before it in the same cell."""
    section = PAGE.read_text(encoding="utf-8").split("### What proves what", 1)[1]
    section = section.split("\n## ", 1)[0]
    found: list[tuple[str, str | None]] = []
    for line in section.splitlines():
        if not line.startswith("| "):
            continue
        for cell in line.split(" | "):
            module: str | None = None
            for ref in re.findall(r"`((?:tests/[\w/]+\.py)?(?:::[\w\[\]-]+)?)`", cell):
                path, _, name = ref.partition("::")
                if path:
                    module = path
                if module is None:
                    continue
                found.append((module, name.split("[")[0] or None))
    return found


def test_every_test_the_promise_map_names_exists() -> None:
    cited = named_tests()
    assert len(cited) > 100, "the map's table was not read"
    missing = []
    for module, name in cited:
        path = REPO / module
        if not path.is_file():
            missing.append(module)
            continue
        if name is None:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        if name not in defined:
            missing.append(f"{module}::{name}")
    assert not missing, f"docs/contributing.md names tests that do not exist: {missing}"
