"""The build stage: `docker build` of a tier's rendered Dockerfile, tagged by content hash.

Done when the registry holds the hash tag, or the local daemon has it (then push sends it).
"""

from __future__ import annotations

import datetime as dt
import subprocess
from functools import cache
from pathlib import Path

from build_graph import settings
from build_graph.engine import buildkit, daemon
from build_graph.engine.availability import Availability
from build_graph.engine.context import context_tar
from build_graph.engine.registry import Presence
from build_graph.errors import BuildFailed
from build_graph.log import log, progress
from build_graph.manifest.model import Stack
from build_graph.plan.plan import PlannedTier

LABEL_PREFIX = "io.build-graph"


def image_available(tier: PlannedTier, seen: Availability) -> bool:
    """Up to date for build: the registry holds the hash tag, or the daemon here has it.
    The daemon is asked only when the registry lacks it (a fresh runner never asks).
    Raises RegistryError when the registry could not say and the daemon lacks it."""
    probe = seen.registry(tier.image)
    if probe.presence is Presence.PRESENT or seen.local(tier.image):
        return True
    seen.answer(tier.image)  # an error raises: 'could not ask' is not 'absent'
    return False


def build(stack: Stack, tier: PlannedTier, seen: Availability) -> None:
    if seen.local(tier.image):
        log(f"[{tier.key}] {tier.image} is already built here")
        return
    if seen.require(tier.image).presence is Presence.PRESENT:
        log(f"[{tier.key}] {tier.image} is in the registry: not rebuilt")
        return
    if tier.spec.compile is not None and not any(tier.wheels_dir.glob("*.whl")):
        raise BuildFailed(f"{tier.key}: no wheels in {tier.wheels_dir}; run compile:{tier.key}")
    command = buildkit.cli()
    buildargs, secrets = settings.for_build(buildkit=command is not None)
    if command is None:
        _warn_classic()
    with context_tar(tier, labels(stack, tier), classic=command is None) as context:
        if command is None:
            daemon.build(context, tier.image, name=tier.key, buildargs=buildargs)
        else:
            buildkit.build(command, context, tier.image, name=tier.key, buildargs=buildargs,
                           secrets=secrets)
    seen.built(tier.image)


@cache
def _warn_classic() -> None:
    progress("warning: no BuildKit here (no docker buildx, no docker CLI with "
             "DOCKER_BUILDKIT support): building with the classic builder, without cache "
             "mounts or secrets")


def labels(stack: Stack, tier: PlannedTier) -> dict[str, str]:
    """OCI annotations plus ours; added only to the Dockerfile sent to the daemon, never to
    the rendered (hashed) one, so a build time or revision never changes a tag."""
    revision, source = _git_facts(stack.root)
    return {
        "org.opencontainers.image.title": f"{stack.name}/{tier.spec.name}",
        "org.opencontainers.image.description": tier.spec.description,
        "org.opencontainers.image.version": (tier.spec.tags or (tier.content_hash,))[0],
        "org.opencontainers.image.revision": revision,
        "org.opencontainers.image.source": source,
        "org.opencontainers.image.created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "org.opencontainers.image.base.name": tier.base_image,
        f"{LABEL_PREFIX}.stack": stack.name,
        f"{LABEL_PREFIX}.tier": tier.spec.name,
        f"{LABEL_PREFIX}.variant": tier.spec.variant,
        f"{LABEL_PREFIX}.content-hash": tier.content_hash,
    }


@cache
def _git_facts(root: Path) -> tuple[str, str]:
    def git(*args: str) -> str:
        try:
            result = subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                                    text=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return result.stdout.strip() if result.returncode == 0 else ""

    revision = git("rev-parse", "HEAD") or "unknown"
    # CI systems put job tokens in remote URLs (GitLab's https://gitlab-ci-token:TOKEN@...):
    # a label is pushed with the image, so only the URL without userinfo goes in it.
    source = git("config", "--get", "remote.origin.url")
    return revision, settings.without_userinfo(source) if source else str(root)
