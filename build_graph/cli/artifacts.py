"""`python -m build_graph sbom <tier>[@variant]`: what the registry stores about a tier's
image, read back by the digest its hash tag names."""

from __future__ import annotations

import json

from build_graph.errors import BuildFailed, ConfigError, ConfigIssue, RegistryError, did_you_mean
from build_graph.manifest.model import Stack
from build_graph.oci import json_door
from build_graph.oci.refs import Presence
from build_graph.plan.plan import PlannedTier, plan
from build_graph.registry.availability import head
from build_graph.stages import trust


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


def sbom(stack: Stack, name: str) -> str:
    """The SBOM stored for the digest the tier's hash tag names. Raises RegistryError when
    the registry cannot say, BuildFailed (with the command that makes it) when it has none."""
    tier = planned_tier(stack, name)
    image = head(tier.image)
    if image.presence is Presence.ERROR:
        raise RegistryError(f"{tier.image}: {image.error}")
    if image.digest is None:
        raise BuildFailed(f"{tier.image} is not in the registry; run `doit push:{tier.key}`")
    stored = trust.store(tier).sbom(image.digest)
    if stored is None:
        raise BuildFailed(
            f"{trust.store(tier).sbom_ref(image.digest)}: no SBOM stored for "
            f"this digest; `doit verify:{tier.key}` stores one (images verified "
            "before SBOMs existed are verified again)"
        )
    # The registry's bytes (hash-checked) are re-serialised as ASCII JSON: whatever strings
    # someone with push rights put in it reach a terminal escaped, never as control codes.
    try:
        document = json_door.loads(stored)
    except ValueError:
        raise BuildFailed(
            f"{trust.store(tier).sbom_ref(image.digest)}: the stored SBOM is "
            f"not JSON; `doit verify:{tier.key}` after deleting it stores a new "
            "one"
        ) from None
    return json.dumps(document, indent=2, ensure_ascii=True) + "\n"
