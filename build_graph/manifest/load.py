"""Load images.toml into a frozen Stack; every problem becomes one ConfigError listing them all."""

from __future__ import annotations

import json
import tomllib
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from build_graph.errors import ConfigError, ConfigIssue, did_you_mean
from build_graph.gpu.releases import Lookup, shipped_only
from build_graph.manifest import schema
from build_graph.manifest.model import Stack
from build_graph.manifest.resolve import resolve_stack
from build_graph.manifest.values import forbidden_character


def read_manifest(path: Path) -> schema.Manifest:
    """Parse and structurally validate; raises ConfigError naming file and keys."""
    if not path.is_file():
        raise ConfigError(
            [
                ConfigIssue(
                    path,
                    "",
                    "no such file; pass --manifest PATH "
                    "(or doit manifest=PATH) naming an images.toml",
                )
            ]
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([ConfigIssue(path, "", f"not valid TOML: {exc}")]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([ConfigIssue(path, "", f"not UTF-8 text: {exc}")]) from None
    try:
        return schema.Manifest.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_issues_from(path, exc)) from None


def load(path: Path | str, lookup: Lookup = shipped_only) -> Stack:
    """Read, validate and resolve a manifest into a frozen Stack.

    Raises ConfigError with every problem of the file (structure first; the semantic
    rules run only on a structurally valid file). `lookup`: where torch pairings come
    from (the shipped data unless `check` passes the index's).
    """
    manifest_path = Path(path).resolve()
    manifest = read_manifest(manifest_path)
    return resolve_stack(manifest_path, manifest, lookup)


def _issues_from(path: Path, exc: ValidationError) -> list[ConfigIssue]:
    issues = []
    for err in exc.errors():
        loc = tuple(str(p) for p in err["loc"])
        key = ".".join("from" if p == "from_" else _key_part(p) for p in loc)
        if err["type"] == "extra_forbidden":
            known = _fields_at(schema.Manifest, loc[:-1])
            message = f"unknown key{did_you_mean(loc[-1], known)}"
            if known and not did_you_mean(loc[-1], known):
                message += f"; known keys: {', '.join(sorted(known))}"
        elif err["type"] == "missing":
            message = "required key is missing"
        else:
            message = err["msg"].removeprefix("Value error, ")
        issues.append(ConfigIssue(path, key, message))
    return issues


def _key_part(part: str) -> str:
    """A key as TOML would quote it when it holds a character no value may (a hostile key
    must not start a new line, or a terminal escape, in the error message)."""
    return json.dumps(part) if forbidden_character(part) else part


def _fields_at(model: type[BaseModel], loc: tuple[str, ...]) -> list[str]:
    """The keys allowed at `loc` (walking models, dicts and lists), for suggestions."""
    annotation: Any = model
    for part in loc:
        annotation = _unwrap(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = next(
                (f for n, f in annotation.model_fields.items() if part in (n, f.alias)), None
            )
            if field is None:
                return []
            annotation = field.annotation
        elif typing.get_origin(annotation) in (dict, list):
            annotation = typing.get_args(annotation)[-1]
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [f.alias or n for n, f in annotation.model_fields.items()]
    return []


def _unwrap(annotation: Any) -> Any:
    """Optional[X] -> X, Annotated[X, ...] -> X."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _unwrap(args[0]) if len(args) == 1 else annotation
    return annotation
