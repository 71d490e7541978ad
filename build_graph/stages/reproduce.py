"""`python -m build_graph reproduce TIER`: rebuild a tier here, from scratch, and compare.

The rebuild takes the tier's current plan (its rendered Dockerfile, context files, locked
packages and, for a compiled tier, the wheels its compile left in build/), BuildKit's cache
ignored (`--no-cache`), into an OCI archive that is neither loaded nor tagged: nothing here
or in the registry changes. It is compared with the image the registry holds under the
tier's hash tag: the same manifest digest, or every config field and file that differs
(oci/image_diff.py), the registry's image fetched with `docker pull` and `docker save`.

The labels that describe a build and not its inputs (the git revision and source) are
taken from the registry's image, so a checkout at another commit with the same hash
compares what its inputs make.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from build_graph.docker import buildkit, daemon
from build_graph.docker.build_request import Archive
from build_graph.errors import BuildFailed, EnvironmentProblem, RegistryError, UntrustedAnswer
from build_graph.log import log
from build_graph.manifest.model import Stack
from build_graph.oci import archive, image_diff, json_door
from build_graph.oci.digest import Digest, parse_digest
from build_graph.oci.refs import Presence, parse_ref
from build_graph.plan.plan import PlannedTier
from build_graph.registry import api
from build_graph.registry.availability import head
from build_graph.stages import build_act

# Labels that say how and where a build ran, not what went in (stages/build_act.labels).
BUILD_LABELS = ("org.opencontainers.image.revision", "org.opencontainers.image.source")


@dataclass(frozen=True)
class Outcome:
    registry: Digest  # the platform image the hash tag names
    rebuilt: Digest
    differences: tuple[str, ...]
    seconds: float

    @property
    def same(self) -> bool:
        return self.registry == self.rebuilt


def reproduce(stack: Stack, tier: PlannedTier, scratch: Path | None = None) -> Outcome:
    """Rebuild `tier` into an archive (in `scratch`, default the tier's build folder: two
    whole images, on the project's disk) and compare it with the registry's.
    RegistryError/BuildFailed when there is nothing to compare."""
    started = time.monotonic()
    command = buildkit.cli()
    if not buildkit.reproducible_here(command):
        raise EnvironmentProblem(
            "reproduce needs docker buildx and a Docker daemon on the containerd image "
            "store (its OCI exporter rewrites file times; the classic store cannot keep a "
            "built manifest): see docs/build-host.md"
        )
    assert command is not None  # reproducible_here
    theirs = _registry_image(tier)
    config = json_door.loads(api.get_blob(theirs.ref, _config_of(theirs)))
    if not isinstance(config, dict):
        raise UntrustedAnswer(f"{tier.image}: its image config is not a JSON object")
    if tier.spec.compile is not None and not any(tier.folder.wheels.glob("*.whl")):
        raise BuildFailed(
            f"{tier.key}: no wheels in {tier.folder.wheels} to rebuild the image from; run "
            f"`doit compile:{tier.key}` first (reproduce rebuilds the image, not the compile)"
        )
    labels = {k: v for k, v in build_act.labels(stack, tier).items() if k not in BUILD_LABELS}
    stated = (config.get("config") or {}).get("Labels") or {}
    labels |= {k: str(stated[k]) for k in BUILD_LABELS if k in stated}
    host_settings = build_act.build_settings(command)
    scratch = scratch or tier.folder.root
    try:
        scratch.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(
            f"reproduce: cannot use {scratch} for the archives: {exc}"
        ) from None
    with tempfile.TemporaryDirectory(prefix=".reproduce-", dir=scratch) as tmp:
        ours = Path(tmp) / "rebuild.oci.tar"
        with build_act.sent_context(stack, tier, labels, classic=False) as context:
            request = build_act.build_request(stack, tier, context, host_settings, Archive(ours))
            rebuilt = buildkit.build(command, request)
        registry, mine = parse_digest(theirs.ref.reference), parse_digest(rebuilt)
        lines: list[str] = []
        if mine != registry:
            lines = _differences(tier, registry, ours, Path(tmp) / "registry.oci.tar")
    return Outcome(registry, mine, tuple(lines), time.monotonic() - started)


def _registry_image(tier: PlannedTier) -> api.PlatformImage:
    answer = head(tier.image)
    if answer.presence is Presence.ERROR:
        raise RegistryError(f"{tier.image}: {answer.error}")
    if answer.presence is not Presence.PRESENT:
        raise BuildFailed(
            f"{tier.image} is not in the registry: nothing to compare with; "
            f"`doit verify:{tier.key}` builds, pushes and verifies it"
        )
    return api.read_image(parse_ref(tier.image))


def _config_of(image: api.PlatformImage) -> Digest:
    assert image.image.config is not None  # read_image: an image manifest
    return image.image.config


def _differences(tier: PlannedTier, registry: Digest, ours: Path, theirs: Path) -> list[str]:
    """The registry's image saved next to the rebuild, and what differs between them."""
    name = f"{tier.image.rsplit(':', 1)[0]}@{registry}"
    daemon.pull(name, tier.platform)
    daemon.save(name, theirs)
    mine = archive.read_image(ours, tier.platform)
    other = archive.read_image(theirs, tier.platform)
    log(f"[{tier.key}] comparing {mine.digest} (rebuilt) with {other.digest} (registry)")
    return image_diff.differences(mine, other, image_diff.archive_reader(ours, mine, theirs, other))
