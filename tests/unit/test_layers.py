"""The package's layers: no module imports a higher layer; the in-image files stay stdlib-only."""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
import tomllib
from pathlib import Path

import pytest

from tests.helpers import REPO

PACKAGE = REPO / "build_graph"
# Lowest first. A module may import its own layer and any lower one, never a higher one.
LAYERS: dict[str, int] = {
    "errors": 0,
    "fs": 0,
    "log": 0,
    "settings": 0,
    "layout": 0,
    "interrupts": 0,
    "untar": 0,
    "gpu": 1,
    "oci": 1,
    "signing": 1,
    "manifest": 2,
    "aptlock": 2,  # read by plan/ (what a template installs), never reading it
    "pylock": 3,  # read by plan/ (a tier's lock and request); recording locks is stages/
    "plan": 4,
    "docker": 5,
    "registry": 6,
    "pypi": 6,
    "ccache": 7,
    "verify": 7,
    "stages": 8,
    "run": 9,
    "cli": 10,
    "__main__": 11,
}
# The adapters take plain values: they never see a manifest, a plan or a stage.
PLAIN = {
    "docker": {"manifest", "plan", "aptlock", "stages", "verify", "ccache"},
    "registry": {"manifest", "plan", "stages", "verify", "ccache"},
    "pypi": {"manifest", "plan", "stages", "verify", "ccache", "docker", "registry"},
}
IN_IMAGE = (
    "verify/in_image/probe.py",
    "verify/in_image/fatbin.py",
    "verify/in_image/finder.py",
    "verify/in_image/inventory.py",
)
SIBLINGS = {"fatbin", "finder", "inventory"}  # mounted beside probe.py in the image


def layer_of(module: str) -> str:
    """'build_graph.plan.render' -> 'plan'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports_of(path: Path) -> list[tuple[str, int]]:
    """(imported build_graph module, line) of every import in the file, nested ones too."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names]
            found.extend((n, node.lineno) for n in [node.module, *names])
        elif isinstance(node, ast.Import):
            found.extend((a.name, node.lineno) for a in node.names)
    return found


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    unknown = (
        {
            layer_of(".".join(("build_graph", *p.relative_to(PACKAGE).with_suffix("").parts)))
            for p in modules()
        }
        - set(LAYERS)
        - {"__init__"}
    )
    assert not unknown, f"give these a layer in LAYERS: {sorted(unknown)}"


def higher_imports(path: Path, own: str) -> list[str]:
    """The imports in `path`, a module of layer `own`, of a higher layer."""
    rank = LAYERS.get(own, 0)
    return [
        f"line {line}: {name}"
        for name, line in imports_of(path)
        if name.startswith("build_graph.")
        and layer_of(name) in LAYERS
        and LAYERS[layer_of(name)] > rank
    ]


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_a_higher_layer(path: Path) -> None:
    own = layer_of(".".join(("build_graph", *path.relative_to(PACKAGE).with_suffix("").parts)))
    higher = higher_imports(path, own)
    assert not higher, f"{path.name} ({own}) imports a higher layer: {higher}"


def test_a_lock_module_that_imports_the_plan_is_caught(tmp_path: Path) -> None:
    """plan/ reads pylock/ (a tier's lock state), so pylock/ may not read plan/: what needs
    the plan (recording locks, `check`'s words) lives in stages/python_pin.py."""
    bad = tmp_path / "sync.py"
    bad.write_text("from build_graph.plan.plan import PlannedTier, plan\n")
    assert higher_imports(bad, "pylock") == [
        "line 1: build_graph.plan.plan",
        "line 1: build_graph.plan.plan.PlannedTier",
        "line 1: build_graph.plan.plan.plan",
    ]
    assert higher_imports(bad, "stages") == []


@pytest.mark.parametrize("name", IN_IMAGE)
def test_in_image_files_import_only_the_standard_library(name: str) -> None:
    outside = [
        f"line {line}: {module}"
        for module, line in imports_of(PACKAGE / name)
        if module.split(".")[0] not in sys.stdlib_module_names
        and module.split(".")[0] not in {"__future__", "torch", *SIBLINGS}
        and module
        not in {
            "build_graph.verify.in_image",
            *(f"build_graph.verify.in_image.{s}" for s in SIBLINGS),
        }
    ]
    assert not outside, f"{name} runs inside images; it may not import {outside}"


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from build_graph.stages.build import build\n")
    assert ("build_graph.stages.build", 2) in imports_of(bad)


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_adapters_take_plain_values(path: Path) -> None:
    own = layer_of(".".join(("build_graph", *path.relative_to(PACKAGE).with_suffix("").parts)))
    banned = PLAIN.get(own, set())
    seen = [
        f"line {line}: {name}"
        for name, line in imports_of(path)
        if name.startswith("build_graph.") and layer_of(name) in banned
    ]
    assert not seen, f"{path.name} ({own}) is an adapter; it may not import {seen}"


# The cap counts code: lines with a token that is not a comment, outside docstrings. A
# module past it has likely grown a second owner. Prose is not charged: the docstrings are
# the reference (manifest/reference.py renders them) and the why of each owner, and a cap
# of 300 physical lines had six modules at 295-300, squeezing prose to stay whole.
CODE_LINES = 300


def code_lines(text: str) -> int:
    """Lines of `text` holding code: not blank, not only a comment, not in a docstring
    (a module's, class's or function's first string, or a string after a class field)."""
    prose: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            for index, statement in enumerate(node.body):
                first = index == 0
                after_field = index > 0 and isinstance(node, ast.ClassDef)
                if (first or after_field) and _is_string(statement):
                    prose.update(range(statement.lineno, (statement.end_lineno or 0) + 1))
    lines: set[int] = set()
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT}
    skipped |= {tokenize.DEDENT, tokenize.ENDMARKER}
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in skipped:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - prose)


def _is_string(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and (isinstance(statement.value.value, str))
    )


def test_code_lines_count_code_not_prose() -> None:
    text = (
        '"""A module.\n\nIts prose."""\n\n# a comment\nimport os  # why\n\n\n'
        'class A:\n    """A class."""\n\n    x: int = 1\n    """the field"""\n\n'
        'def f(\n    a: int,\n) -> str:\n    """What it does."""\n    return """not\nprose"""\n'
    )
    assert code_lines(text) == 8  # import, class, x, def (3 lines), return (2 lines)


def test_few_top_level_modules_and_none_too_long() -> None:
    top = sorted(
        p.name for p in PACKAGE.glob("*.py") if p.name not in {"__init__.py", "__main__.py"}
    )
    assert len(top) <= 7, f"build_graph/ has {len(top)} loose modules: {top}"
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in modules()
        if (n := code_lines(p.read_text())) > CODE_LINES
    }
    assert not long, f"modules over {CODE_LINES} lines of code: {long}"


def test_only_the_layout_module_composes_build_paths() -> None:
    """`"build"` as a path part is written once, in layout.py (every other module asks it)."""
    pattern = re.compile(r"""/ ["']build["']|["']build/""")
    found = [
        f"{p.relative_to(PACKAGE)}:{n}"
        for p in modules()
        if p.name != "layout.py" and "in_image" not in p.parts
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, f"build/ paths composed outside build_graph/layout.py: {found}"


def test_every_package_folder_ships_in_the_wheel() -> None:
    """pyproject.toml lists packages by hand (templates/ and examples/ are mapped into the
    package)."""
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    assert set(setuptools["package-dir"]) == {"build_graph.templates", "build_graph.examples"}
    folders = {
        ".".join(("build_graph", *p.parent.relative_to(PACKAGE).parts))
        for p in PACKAGE.rglob("__init__.py")
    }
    assert folders | set(setuptools["package-dir"]) == {
        name for name in listed if not name.startswith("build_graph.examples.")
    }


def test_every_example_folder_with_files_is_listed_so_the_install_is_quiet() -> None:
    """setuptools warns (40 lines each) for every folder of package data whose path reads
    as a package name and is not listed as one: the example stacks' folders are listed."""
    listed = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    examples = REPO / "examples"
    skipped = {"build", "__pycache__", "gen"}  # a checkout's own state (never shipped)
    wanted = {
        ".".join(("build_graph.examples", *folder.relative_to(examples).parts))
        for folder in examples.rglob("*")
        if folder.is_dir()
        and not skipped & set(folder.relative_to(examples).parts)
        and all(part.isidentifier() for part in folder.relative_to(examples).parts)
        and any(child.is_file() for child in folder.iterdir())
    }
    assert wanted - listed == set(), "add these to pyproject.toml's packages"
    assert {n for n in listed if n.startswith("build_graph.examples.")} - wanted == set()
