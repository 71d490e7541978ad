"""Why a tier would rebuild, in sentences: its inputs now against those of its last push."""

from __future__ import annotations

from build_graph.fs import read_record
from build_graph.plan.plan import PlannedTier

_NAMES = {
    "dockerfile": "its rendered Dockerfile (template or values)",
    "build_args": "its build_args",
    "compile": "its compile inputs (builder, script, sources)",
}


def changes(tier: PlannedTier) -> list[str]:
    """What differs from the inputs recorded at this machine's last push of the tier.

    Empty when the last push was of this very hash; one sentence when there is no record.
    """
    record = read_record(tier.folder.push_record)
    if record is None or not isinstance(record.get("inputs"), dict):
        return [
            "no earlier push of this tier is recorded here, so there is nothing to compare with"
        ]
    if record.get("image") == tier.image:
        return []
    before: dict[str, str] = record["inputs"]
    now = dict(tier.inputs)
    found = []
    for key in sorted(set(before) | set(now)):
        if before.get(key) == now.get(key):
            continue
        found.append(_sentence(key, before.get(key), now.get(key), tier))
    return found or ["the hash's own schema changed (an upgrade of build-graph's hashing)"]


def _sentence(key: str, before: str | None, now: str | None, tier: PlannedTier) -> str:
    if key.startswith("file:"):
        name = key.removeprefix("file:")
        what = "was added" if before is None else "was removed" if now is None else "changed"
        return f"context file {name} {what}"
    if key == "parent":
        if tier.parent_key:
            return f"its parent {tier.parent_key} changed ({before} -> {now})"
        return f"its base image changed ({before} -> {now})"
    return f"{_NAMES.get(key, key)} changed"
