"""What the build, push and promote stages do for one tier (doit-free; tasks.py wires them)."""

from __future__ import annotations

import datetime as dt
import subprocess
from functools import cache
from pathlib import Path

from build_graph import docker_ops, site
from build_graph.availability import Availability
from build_graph.build_context import context_tar
from build_graph.docker_ops import Presence, Probe, log
from build_graph.errors import BuildFailed, RegistryError
from build_graph.model import Stack
from build_graph.plan import PlannedTier
from build_graph.records import read_record, write_record

LABEL_PREFIX = "io.build-graph"


def registry_answer(tier: PlannedTier, seen: Availability, ref: str | None = None) -> Probe:
    """A fresh registry answer for acting on; an error fails loudly, never reads as absent."""
    ref = ref or tier.image
    probe = seen.refresh(ref)
    if probe.presence is Presence.ERROR:
        raise RegistryError(
            f"cannot ask the registry {docker_ops.registry_of(ref)} about {ref}: {probe.error}; "
            "start it (scripts/services.sh up) or fix [stack] registry in images.toml")
    return probe


def recorded_digest(tier: PlannedTier) -> str | None:
    """The digest this machine pushed (or found) for the tier's hash tag, from push.json.

    Records are written only after success, so they answer 'is it in the registry?' without
    asking; a fresh machine has none and asks the registry instead.
    """
    record = read_record(tier.push_record)
    if record and record.get("image") == tier.image and record.get("digest"):
        return str(record["digest"])
    return None


def image_available(tier: PlannedTier, seen: Availability) -> bool:
    """Up to date for build: the hash tag was pushed, or exists locally or in the registry."""
    return (recorded_digest(tier) is not None or seen.local(tier.image)
            or seen.registry(tier.image).presence is Presence.PRESENT)


def build(stack: Stack, tier: PlannedTier, seen: Availability) -> None:
    if seen.local(tier.image):
        log(f"[{tier.key}] {tier.image} is already built here")
        return
    if registry_answer(tier, seen).presence is Presence.PRESENT:
        log(f"[{tier.key}] {tier.image} is in the registry: not rebuilt")
        return
    if tier.spec.compile is not None and not any(tier.wheels_dir.glob("*.whl")):
        raise BuildFailed(f"{tier.key}: no wheels in {tier.wheels_dir}; run compile:{tier.key}")
    with context_tar(tier, labels(stack, tier)) as context:
        docker_ops.build(context, tier.image, name=tier.key, buildargs=site.build_args())
    seen.built(tier.image)


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
    return revision, git("config", "--get", "remote.origin.url") or str(root)


def pushed(tier: PlannedTier, seen: Availability) -> bool:
    if recorded_digest(tier) is not None:
        return True
    probe = seen.registry(tier.image)
    if probe.presence is Presence.PRESENT and probe.digest:
        # Remember the registry's answer, as push would have: the next run need not ask.
        write_record(tier.push_record, {"image": tier.image, "digest": probe.digest})
        return True
    return False


def push(tier: PlannedTier, seen: Availability) -> None:
    probe = registry_answer(tier, seen)
    if probe.presence is Presence.PRESENT and probe.digest:
        log(f"[{tier.key}] registry already holds {tier.image} ({probe.digest})")
        digest = probe.digest
    else:
        digest = docker_ops.push(tier.image)
        seen.pushed(tier.image, digest)
    write_record(tier.push_record, {"image": tier.image, "digest": digest})


def image_digest(tier: PlannedTier, seen: Availability) -> str | None:
    recorded = recorded_digest(tier)
    if recorded is not None:
        return recorded
    probe = seen.registry(tier.image)
    return probe.digest if probe.presence is Presence.PRESENT else None


def promoted(tier: PlannedTier, seen: Availability) -> bool:
    """Up to date for promote: every human tag already names the verified digest."""
    digest = image_digest(tier, seen)
    if digest is None or not _verified(tier, digest):
        return False
    record = read_record(tier.promote_record)
    if record and record.get("digest") == digest and record.get("tags") == list(tier.human_tags):
        return True
    if all(seen.registry(f"{tier.repository}:{t}").digest == digest for t in tier.human_tags):
        # Remember the registry's answer, as promote would have: the next run need not ask.
        write_record(tier.promote_record, {"digest": digest, "tags": list(tier.human_tags)})
        return True
    return False


def _verified(tier: PlannedTier, digest: str) -> bool:
    report = read_record(tier.verify_record)
    return bool(report and report.get("passed") is True and report.get("digest") == digest)


def promote(tier: PlannedTier, seen: Availability) -> None:
    """Move the human tags to the verified digest; refuses anything not verified."""
    probe = registry_answer(tier, seen)
    if probe.digest is None or not _verified(tier, probe.digest):
        raise BuildFailed(f"{tier.key}: {tier.image} has no passing verify report for its "
                          "registry digest; human tags stay where they were")
    # Tag exactly the verified manifest (by digest), never whatever the daemon calls the
    # hash tag locally.
    verified_ref = f"{tier.repository}@{probe.digest}"
    docker_ops.ensure_local(verified_ref)
    for name in tier.human_tags:
        ref = f"{tier.repository}:{name}"
        docker_ops.tag(verified_ref, ref)
        digest = docker_ops.push(ref)
        seen.pushed(ref, digest)
        if digest != probe.digest:
            raise BuildFailed(f"{ref} was pushed as {digest}, not the verified {probe.digest}; "
                              "check the registry for concurrent writers")
        log(f"[{tier.key}] {ref} -> {digest}")
    write_record(tier.promote_record, {"digest": probe.digest, "tags": list(tier.human_tags)})
