"""Small JSON records in the build folder (push digests, verify reports), written atomically."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from build_graph.render import write_if_changed


def write_record(path: Path, data: dict[str, Any]) -> None:
    write_if_changed(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_record(path: Path) -> dict[str, Any] | None:
    """The record, or None when it is missing or unreadable (treated as 'not done')."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
