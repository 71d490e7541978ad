"""JSON from outside (a registry's manifests and blobs, a stored report), parsed at the door.

`json.loads` raises RecursionError, not ValueError, for deeply nested input (`[[[[...`,
a few kilobytes does it): every reader of outside JSON handles ValueError as "not what it
claims to be", so here it becomes one. What parses is also refused past MAX_DEPTH levels
(no manifest, report or token nests a tenth of that), so no recursive reader downstream
(a log line, a record written back) meets a depth it cannot handle.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64


def loads(data: str | bytes) -> Any:
    """json.loads; ValueError for anything that is not JSON, too deep included."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None
    if _depth(value) > MAX_DEPTH:
        raise ValueError(f"JSON nested more than {MAX_DEPTH} levels deep")
    return value


def _depth(value: Any) -> int:
    """How deep containers nest in `value`, counted without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            todo.extend((child, level + 1) for child in item)
    return deepest
