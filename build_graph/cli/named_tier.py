"""The planned tier a command names: TIER (the stack's default variant), TIER@VARIANT, and
TIER/ARCH for one platform's image of a tier built per platform (`size`, `sbom`,
`reproduce`)."""

from __future__ import annotations

from build_graph.errors import ConfigError, ConfigIssue, did_you_mean
from build_graph.manifest.model import Stack
from build_graph.plan.plan import PlannedTier, plan


def planned_tier(stack: Stack, name: str) -> PlannedTier:
    """'tier' (the default variant) or 'tier@variant', and '/arm64' for one platform's
    image of a tier built per platform; a ConfigError naming the choices."""
    named, _, arch = name.partition("/")
    tier, _, variant = named.partition("@")
    variant = variant or stack.default_variant
    planned = plan(stack)
    for p in planned:
        if (
            p.spec.name == tier
            and p.spec.variant == variant
            and (p.platform or "").partition("/")[2] == arch
        ):
            return p
    keys = sorted(
        {f"{p.spec.name}@{p.spec.variant}" for p in planned if not p.platform}
        | {p.key for p in planned}
    )
    raise ConfigError(
        [
            ConfigIssue(
                stack.manifest,
                "tiers",
                f"no tier {name!r} in variant "
                f"{variant!r}{did_you_mean(name, keys)}; known: "
                f"{', '.join(keys)}",
            )
        ]
    )
