"""Newer tags of the same shape, pure: a tag's runs of digits are version components and
everything between them is fixed ('12.4.1-cudnn-devel-ubuntu22.04' has the shape
'#.#.#-cudnn-devel-ubuntu#.#'). A tag of another shape (another suffix, one component
more) is another image line, never proposed.

Which digits may move is the user's: a digit run that came from a {field} of the `from`
template can be edited through that field; the rest is fixed. The tags come from a
registry already checked against the tag grammar, never trusted to be sorted.
"""

from __future__ import annotations

import re
import string
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")  # the distribution spec's tag grammar
_RUNS = re.compile(r"(\d+)")


@dataclass(frozen=True)
class Shape:
    """A tag cut at its digit runs: `fixed` is the text around them (one more than the
    runs), `owners[i]` the editable field digit run i came from, or None when fixed."""

    tag: str
    fixed: tuple[str, ...]
    runs: tuple[str, ...]
    owners: tuple[str | None, ...]

    def runs_of(self, tag: str) -> tuple[str, ...] | None:
        """`tag`'s digit runs when it has this shape, else None."""
        parts = _RUNS.split(tag)
        return tuple(parts[1::2]) if tuple(parts[0::2]) == self.fixed else None

    @property
    def fields(self) -> list[str]:
        return list(dict.fromkeys(o for o in self.owners if o is not None))


@dataclass(frozen=True)
class Newer:
    """A newer tag, and the value its field would take (None for a fixed tag)."""

    tag: str
    value: str | None = None


def filled(template: str, fields: Mapping[str, str]) -> tuple[str, tuple[str | None, ...]]:
    """`template` with its {field}s filled, and for each character the field it came from
    (None: written literally). Raises KeyError for an unknown field."""
    text, owners = "", list[str | None]()
    for literal, name, _, _ in string.Formatter().parse(template):
        text += literal
        owners += [None] * len(literal)
        if name is not None:
            text += fields[name]
            owners += [name] * len(fields[name])
    return text, tuple(owners)


def shape_of(tag: str, owners: tuple[str | None, ...], editable: Collection[str]) -> Shape:
    """`tag`'s shape; `owners` is per character (from `filled`). A digit run is editable
    when every digit of it came from one field named in `editable`."""
    fixed, runs, owned = [], [], []
    at = 0
    for i, part in enumerate(_RUNS.split(tag)):
        if i % 2:
            names = set(owners[at : at + len(part)])
            name = names.pop() if len(names) == 1 else None
            runs.append(part)
            owned.append(name if name in editable else None)
        else:
            fixed.append(part)
        at += len(part)
    return Shape(tag, tuple(fixed), tuple(runs), tuple(owned))


def _number(runs: Iterable[str]) -> tuple[int, ...]:
    return tuple(int(r) for r in runs)


def newer_tags(shape: Shape, tags: Iterable[str]) -> list[str]:
    """Tags of the same shape whose digits, read as a version, are newer; newest first."""
    now = _number(shape.runs)
    found = {
        t: n for t in tags if (runs := shape.runs_of(t)) is not None and (n := _number(runs)) > now
    }
    return sorted(found, key=lambda t: (found[t], t), reverse=True)


def newer_values(shape: Shape, field: str, value: str, tags: Iterable[str]) -> list[Newer]:
    """Tags of the same shape that differ from `shape.tag` only in `field`'s digits, and
    there are newer: newest first, each with the value `field` would take. [] when the
    field's digits cannot be told apart from its neighbours'."""
    parts = _RUNS.split(value)
    mine = [i for i, o in enumerate(shape.owners) if o == field]
    width = len(parts) // 2
    if not width or len(mine) % width:
        return []
    now = _number(shape.runs[i] for i in mine[:width])
    found: dict[str, tuple[tuple[int, ...], str]] = {}
    for tag in tags:
        runs = shape.runs_of(tag)
        if runs is None or any(
            runs[i] != r for i, r in enumerate(shape.runs) if shape.owners[i] != field
        ):
            continue
        chunks = {tuple(runs[i] for i in mine[k : k + width]) for k in range(0, len(mine), width)}
        if len(chunks) != 1:  # the field twice in the tag, with two values: not one edit
            continue
        chunk = chunks.pop()
        if _number(chunk) > now:
            parts[1::2] = chunk
            found[tag] = (_number(chunk), "".join(parts))
    order = sorted(found, key=lambda t: (found[t][0], t), reverse=True)
    return [Newer(t, found[t][1]) for t in order]
