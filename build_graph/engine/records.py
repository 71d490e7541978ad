"""Small JSON records in a tier's build folder: this machine's memory of the registry.

A record is written only after the step it describes succeeded, so it answers 'is it in
the registry?' without asking; a fresh machine has none and asks the registry instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from build_graph.engine.availability import Availability
from build_graph.engine.registry import Presence
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


def recorded_digest(tier: PlannedTier) -> str | None:
    """The digest this machine pushed (or found) for the tier's hash tag, from push.json."""
    record = read_record(tier.push_record)
    if record and record.get("image") == tier.image and record.get("digest"):
        return str(record["digest"])
    return None


def image_digest(tier: PlannedTier, seen: Availability) -> str | None:
    """The hash tag's digest: from push.json, else from the run's registry probe."""
    recorded = recorded_digest(tier)
    if recorded is not None:
        return recorded
    probe = seen.registry(tier.image)
    return probe.digest if probe.presence is Presence.PRESENT else None


def passing_report(tier: PlannedTier, digest: str) -> bool:
    """Whether verify.json is a passing report for exactly this digest."""
    report = read_record(tier.verify_record)
    return bool(report and report.get("passed") is True and report.get("digest") == digest)
