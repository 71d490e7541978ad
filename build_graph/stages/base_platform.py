"""Before one platform's build of a tier on a `from` image: does that image have the platform?

BuildKit would otherwise say it its own way ("no match for platform in manifest"), or,
given a single-platform image of another architecture, build on it with a warning and leave
an image whose config and binaries disagree (verify would catch that, after the compile).
The pinned reference names a digest, so what is read here is checked at the door
(registry/api.py hashes the bytes): an index's platforms, or one image's config.

A registry that cannot be asked is not a verdict: the build goes ahead and BuildKit, which
may hold other credentials, answers for itself (one line says so).
"""

from __future__ import annotations

from functools import cache

from build_graph.errors import BuildFailed, BuildGraphError
from build_graph.log import progress
from build_graph.oci import json_door
from build_graph.oci.platforms import stated_platform
from build_graph.oci.refs import parse_ref
from build_graph.plan.plan import PlannedTier
from build_graph.registry import api


def check(tier: PlannedTier) -> None:
    """BuildFailed naming the image and its platforms when the pinned `from` image has no
    image for the tier's platform. Only for a root tier built per platform."""
    if tier.platform is None or tier.parent_key is not None or "@" not in tier.base_image:
        return
    try:
        found = platforms_of(tier.base_image)
    except (BuildGraphError, ValueError, KeyError, TypeError) as exc:
        progress(
            f"[{tier.key}] note: could not read the platforms of {tier.base_image} "
            f"({str(exc)[:200]}); the build will say"
        )
        return
    if tier.platform not in found:
        raise BuildFailed(
            f"{tier.key}: {tier.spec.from_image} (pinned {tier.base_image}) has "
            f"no {tier.platform} image, only {', '.join(sorted(found)) or 'none'};"
            f" name a `from` image that holds {tier.platform}, or leave it out of "
            f"tiers.{tier.spec.name}'s platforms"
        )


@cache
def platforms_of(reference: str) -> frozenset[str]:
    """'os/architecture' of every image the reference names (oci/contents.py): an index's
    platform entries (attestations aside), or the one image's config. Errors raise
    (RegistryError, UntrustedAnswer; ValueError for an entry or config that states no
    os/architecture)."""
    ref = parse_ref(reference)
    named = api.read_contents(ref)
    if named.config is not None:
        stated = [stated_platform(json_door.loads(api.get_blob(ref, named.config)))]
    else:
        stated = [d.platform for d in named.images]
    if None in stated:
        raise ValueError("an image or index entry that states no os/architecture")
    return frozenset(p for p in stated if p)
