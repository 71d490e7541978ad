"""docs/reference.md is rendered from the schema, and the schema describes every key."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import BaseModel

from build_graph.manifest import schema, stack_schema
from build_graph.manifest.reference import REGENERATE, description, render, sections, table
from tests.helpers import REPO

PAGE = REPO / "docs" / "reference.md"
TABLES = [("", schema.Manifest), *sections(schema.Manifest)]


def test_the_page_is_what_the_schema_renders() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), (
        f"docs/reference.md differs from the schema; regenerate it: {REGENERATE}"
    )


def test_the_module_prints_the_page() -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "build_graph.manifest.reference"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert printed == render()


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t[0] or "manifest")
def test_every_key_and_table_is_described(table: tuple[str, type[BaseModel]]) -> None:
    name, model = table
    assert model.__dict__.get("__doc__"), f"schema.{model.__name__} ([{name}]) has no docstring"
    missing = [key for key in model.model_fields if not description(model, key)]
    assert not missing, f"schema.{model.__name__}: describe {missing} (a docstring under each)"


def test_every_table_is_listed() -> None:
    assert [name for name, _ in TABLES[1:]] == [
        "stack",
        "versions",
        "gpu",
        "cache",
        "signing",
        "apt",
        "layers",
        "tiers.<name>",
        "tiers.<name>.compile",
        "tiers.<name>.verify",
        "variants.<name>",
        "variants.<name>.gpu",
    ]


def test_a_key_without_a_docstring_is_found() -> None:
    class Bare(stack_schema.Strict):
        """A table."""

        size: int = 1

    assert description(Bare, "size") == ""


def test_a_type_without_a_word_fails_the_render() -> None:
    class Odd(stack_schema.Strict):
        """A table."""

        ratio: float = 0.5
        """a float"""

    with pytest.raises(TypeError, match="no word for the type"):
        table(Odd)
