"""images.toml's reference page, rendered from the schema (docs/reference.md is its output).

The schema (manifest/schema.py) owns every word of it: a table's prose is its model's
docstring, a key's is its `Field(description=...)`. This module only walks the models and
lays them out: section, key, type, default, description. Pure; `python -m
build_graph.manifest.reference > docs/reference.md` regenerates the page, and
tests/unit/test_reference.py fails when the page and `render()` differ.
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import BaseModel, StrictInt
from pydantic.fields import FieldInfo

from build_graph.manifest import grammar, schema

REGENERATE = "python -m build_graph.manifest.reference > docs/reference.md"

# How a type reads in the page. Keyed by the grammar's own types, so a new grammar type
# without a word here fails the render (and its test) instead of printing a Python repr.
# Text and Tag are one type to Python (a single-line string): both read "string".
_WORDS: dict[Any, str] = {
    str: "string",
    bool: "boolean",
    int: "integer",
    StrictInt: "integer",
    grammar.Text: "string",
    grammar.Version: "version",
    grammar.Name: "name",
    grammar.FieldName: "field name",
    grammar.ArgName: "build-arg name",
    grammar.Repository: "repository",
    grammar.PlatformText: "platform",
    grammar.AptPackage: "Debian package",
    grammar.PipRequirement: "pip requirement",
    grammar.ContextPath: "path",
}


def render() -> str:
    """The whole page, Markdown, ending in one newline."""
    lines = [
        f"<!-- Generated from build_graph/manifest/schema.py: do not edit. {REGENERATE} -->",
        "",
        "# images.toml reference",
        "",
        _doc(schema.Manifest),
    ]
    for name, model in sections(schema.Manifest):
        lines += ["", f"## `[{name}]`", "", _doc(model), "", *table(model)]
    return "\n".join(lines) + "\n"


def sections(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, type[BaseModel]]]:
    """Every table of a manifest and its model, in the schema's order, each followed by the
    tables inside it: ('stack', StackSection), ..., ('tiers.<name>', Tier),
    ('tiers.<name>.compile', Compile), ..."""
    for key, field in model.model_fields.items():
        table, keyed = _table_of(field.annotation)
        if table is not None:
            name = prefix + (field.alias or key) + (".<name>" if keyed else "")
            yield name, table
            yield from sections(table, name + ".")


def description(model: type[BaseModel], key: str) -> str:
    """A key's description: its own, or for a table its model's docstring ('' when none)."""
    field = model.model_fields[key]
    table, _ = _table_of(field.annotation)
    return field.description or (_doc(table) if table is not None else "")


def table(model: type[BaseModel]) -> list[str]:
    rows = [
        f"| `{field.alias or key}` | {_type(_annotation(field))} | {_default(field)} "
        f"| {_cell(description(model, key))} |"
        for key, field in model.model_fields.items()
        if _table_of(field.annotation)[0] is None
    ]
    return ["| key | type | default | meaning |", "|---|---|---|---|", *rows] if rows else []


def _table_of(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The model a key holds (itself a table, or a table of them by name), and which."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if _is_model(annotation):
        return annotation, False
    if typing.get_origin(annotation) in (types.UnionType, typing.Union) and len(args) == 1:
        return _table_of(args[0])
    if typing.get_origin(annotation) is dict and _is_model(args[1]):
        return args[1], True
    return None, False


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _annotation(field: FieldInfo) -> Any:
    """The type as written: pydantic moves a top-level Annotated's validators to metadata."""
    return Annotated[field.annotation, *field.metadata] if field.metadata else field.annotation


def _type(annotation: Any) -> str:
    if annotation in _WORDS:
        return _WORDS[annotation]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (types.UnionType, typing.Union):
        return " or ".join(_type(a) for a in args if a is not type(None))
    if origin is Literal:
        return " or ".join(f"`{json.dumps(a)}`" for a in args)
    if origin is list:
        return f"list of {_type(args[0])}"
    if origin is dict:
        return f"table: {_type(args[0])} = {_type(args[1])}"
    raise TypeError(f"the reference has no word for the type {annotation!r}: add one to _WORDS")


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    return "not set" if value is None else f"`{_toml(value)}`"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _doc(model: type[BaseModel]) -> str:
    """The model's own docstring (never a base class's: each table says its own job)."""
    return inspect.cleandoc(model.__dict__.get("__doc__") or "")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


if __name__ == "__main__":
    print(render(), end="")
