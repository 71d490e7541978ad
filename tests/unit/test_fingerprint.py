"""The verifier's fingerprint covers the code of every rule it applies (issue 18)."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from build_graph.verify import request
from tests.helpers import WANT

PACKAGE = Path(request.__file__).resolve().parents[1]
# Imported by the verifier but no rule of it: the promises' data types (the promises enter
# the fingerprint as values) and the digest function (its schema is in every hash).
NOT_RULES = {"manifest/model.py", "manifest/expectation.py", "plan/hashing.py"}


def _imports(path: Path) -> set[Path]:
    """build_graph modules `path` imports (any depth of the file, as files)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = (
            [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else []
        )
        for name in names:
            if name.startswith("build_graph."):
                module = PACKAGE.parent / name.replace(".", "/")
                for candidate in (module.with_suffix(".py"), module / "__init__.py"):
                    if candidate.is_file():
                        found.add(candidate)
    return found


def test_every_module_the_verifier_runs_is_fingerprinted() -> None:
    covered = set(request.verifier_files())
    todo, seen = list(covered), set(covered)
    while todo:
        for module in _imports(todo.pop()) - seen:
            seen.add(module)
            if module.relative_to(PACKAGE).as_posix() not in NOT_RULES:  # data: not walked
                todo.append(module)
    missing = {p.relative_to(PACKAGE).as_posix() for p in seen - covered} - NOT_RULES
    assert not missing, f"not fingerprinted: {sorted(missing)}"
    assert PACKAGE / "gpu" / "archs.py" in covered and PACKAGE / "gpu" / "tables.py" in covered
    for probe in request.PROBE_FILES:
        assert probe in covered


@pytest.mark.parametrize("name", ["gpu/releases.py", "gpu/platform_rules.py", "gpu/__init__.py"])
def test_code_verify_never_runs_is_not_fingerprinted(name: str) -> None:
    """Placement alone changes nothing: these sit beside the rules, and verify runs none."""
    assert PACKAGE / name not in request.verifier_files()


@pytest.mark.parametrize(
    ("changed", "counts"),
    [
        ("gpu/archs.py", True),
        ("gpu/tables.py", True),
        ("verify/checks.py", True),
        ("verify/in_image/fatbin.py", True),
        ("gpu/releases.py", False),
    ],
)
def test_a_fix_to_a_rule_changes_the_fingerprint(
    tmp_path: Path, changed: str, counts: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder in ("verify", "gpu"):
        shutil.copytree(
            PACKAGE / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    monkeypatch.setattr(request, "PACKAGE", tmp_path)
    request._verifier_code.cache_clear()
    before = request.fingerprint(WANT, gpu_present=False)
    with (tmp_path / changed).open("a") as handle:
        handle.write("\n# a fix\n")
    request._verifier_code.cache_clear()
    try:
        assert (request.fingerprint(WANT, gpu_present=False) != before) is counts
    finally:
        monkeypatch.undo()
        request._verifier_code.cache_clear()
