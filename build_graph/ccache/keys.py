"""The compiler cache's archive keys: 'stack/tier/variant-<toolchain>.tar.zst', one archive
per toolchain, and the fields a fallback reads back from a key."""

from __future__ import annotations

import re

from build_graph.manifest.model import Stack
from build_graph.plan.hashing import TAG_LENGTH
from build_graph.plan.plan import PlannedTier

# 'stack/tier/variant-<toolchain>.tar.zst'; the toolchain hash is the last '-' field.
_KEY_RE = re.compile(rf"^([^/]+)/([^/]+)/([^/]+)-[0-9a-f]{{{TAG_LENGTH}}}\.tar\.zst$")


def cache_key(stack: Stack, tier: PlannedTier, builder: PlannedTier) -> str:
    """'stack/tier/variant-<builder hash>.tar.zst': one archive per toolchain (the builder's
    files' hash: [layers] changes its tag, not its compilers)."""
    return f"{tier_prefix(stack, tier)}{builder.files_hash}.tar.zst"


def tier_prefix(stack: Stack, tier: PlannedTier) -> str:
    """Where fallbacks are listed: keys starting so, of which `same_tier` keeps the right ones.
    One platform's compile of a tier built per platform has 'variant@os-arch' in place of
    the variant ('@' is in no name): another architecture's objects are only misses."""
    where = f"@{tier.platform.replace('/', '-')}" if tier.platform else ""
    return f"{stack.name}/{tier.spec.name}/{tier.spec.variant}{where}-"


def key_fields(key: str) -> tuple[str, str, str] | None:
    """(stack, tier, variant) of an archive key, None when `key` is not one of ours."""
    match = _KEY_RE.match(key)
    return (match[1], match[2], match[3]) if match else None
