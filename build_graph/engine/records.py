"""Small JSON records in a tier's build folder: this machine's notes, never the truth.

The registry answers whether an image, a report or a tag exists; records only say what this
machine last saw (a hint for the next run's first round of questions, `doit info`'s
comparison) and keep copies of reports so they are not downloaded twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from build_graph.engine.digest import Digest, maybe_digest
from build_graph.fs import write_if_changed
from build_graph.plan.plan import PlannedTier


def write_record(path: Path, data: dict[str, Any]) -> None:
    write_if_changed(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_record(path: Path) -> dict[str, Any] | None:
    """The record, or None when it is missing or unreadable (treated as 'not done')."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def recorded_digest(tier: PlannedTier) -> Digest | None:
    """The digest this machine last saw for the tier's hash tag (push.json): a hint only
    (None when the note is missing, for another image, or not a digest)."""
    record = read_record(tier.push_record)
    if record and record.get("image") == tier.image:
        return maybe_digest(record.get("digest"))
    return None

