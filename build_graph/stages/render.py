"""The render stage: write a tier's rendered Dockerfile (and compile script) to its folder.

The text was rendered while planning (plan/render.py): this stage only puts it on disk for
people and tools to read. Files are written atomically and only when their bytes change.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from build_graph.fs import write_if_changed
from build_graph.plan.plan import PlannedTier
from build_graph.stages.stage import Stage
from build_graph.stages.work import Work


def rendered_files(tier: PlannedTier) -> dict[Path, str]:
    """Every file the tier's render writes, with its text."""
    files = {tier.folder.dockerfile: tier.dockerfile}
    if tier.script is not None:
        files[tier.folder.compile_script] = tier.script
    return files


def rendered_digest(tier: PlannedTier) -> str:
    """Changes exactly when a rendered file's text does (doit's config_changed value)."""
    return hashlib.sha256("\0".join(rendered_files(tier).values()).encode()).hexdigest()


def render(tier: PlannedTier) -> None:
    for path, text in rendered_files(tier).items():
        write_if_changed(path, text, mode=0o755 if path == tier.folder.compile_script else None)


def _write(work: Work) -> None:
    render(work.tier)


def _targets(work: Work) -> list[str]:
    return [str(path) for path in rendered_files(work.tier)]


def _config(work: Work) -> str:
    return rendered_digest(work.tier)


STAGE = Stage(
    "render",
    "write each tier's Dockerfile (and compile script) under build/",
    act=_write,
    targets=_targets,
    config=_config,
    quiet=True,
)
