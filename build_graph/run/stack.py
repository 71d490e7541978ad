"""The stack as every command and `doit` take it: images.toml loaded and checked, then no
tier named like a stage (`doit <tier>` and `doit <stage>` share doit's names).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from build_graph.errors import ConfigError, ConfigIssue
from build_graph.manifest.model import Stack
from build_graph.stages import pipeline

if TYPE_CHECKING:
    from build_graph.gpu.releases import Lookup


def load_stack(path: Path | str, lookup: Lookup | None = None) -> Stack:
    """The stack in `path` as every command takes it: the manifest's checks, then no tier
    named like a stage (ConfigError, exit 2). Imported here, not at the top: a no-op `doit`
    run reads its plan from the plan cache and never needs the manifest's loader."""
    from build_graph.gpu.releases import shipped_only
    from build_graph.manifest.load import load

    stack = load(path, lookup or shipped_only)
    check_tier_names(stack)
    return stack


def check_tier_names(stack: Stack) -> None:
    """`doit <tier>` builds a tier, so no tier may take a stage's name (the manifest refuses
    doit's own commands). ConfigError (exit 2) naming each such tier."""
    names = pipeline.by_name()
    taken = sorted({t.name for v in stack.variants for t in v.tiers if t.name in names})
    if taken:
        raise ConfigError(
            ConfigIssue(
                stack.manifest,
                f"tiers.{name}",
                f"{name!r} is a stage of the pipeline, so `doit {name}` could not mean the "
                "tier; rename the tier",
            )
            for name in taken
        )
