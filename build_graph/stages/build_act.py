"""The build stage's action: `docker build` of a tier's rendered Dockerfile, tagged by
content hash (its row and up-to-date check: stages/build.py).
"""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import time
from functools import cache
from pathlib import Path
from typing import IO

from build_graph import settings
from build_graph.docker import buildkit, daemon, oci_layout
from build_graph.docker.build_context import context_tar
from build_graph.docker.build_request import BuildRequest, Layout, Loaded, Output
from build_graph.errors import BuildFailed, NameTaken
from build_graph.layout import DEBS_DIR, LABEL_PREFIX, PYWHEELS_DIR, WHEELS_DIR
from build_graph.log import log, progress
from build_graph.manifest.model import Stack
from build_graph.oci.contents import CREATED
from build_graph.oci.refs import Presence
from build_graph.plan.plan import PlannedTier
from build_graph.plan.render import dockerquote
from build_graph.registry.availability import Availability
from build_graph.stages import base_platform, debs, figures, preflight, pywheels
from build_graph.stages.work import Facts, Work

# Every image's time: its config's `created`, its history, every file in its layers (where
# the engine rewrites timestamps: buildkit.reproducible_here), and SOURCE_DATE_EPOCH for the
# templates' RUN steps (.pyc files with checked-hash invalidation, wheels' zip entries). A
# constant, so it follows from a tier's inputs as its hash does: 1980-01-01, the oldest time
# a zip entry can hold (wheels clamp to it; rules_oci and ko use the Unix epoch itself).
SOURCE_DATE_EPOCH = 315532800
EPOCH_TEXT = dt.datetime.fromtimestamp(SOURCE_DATE_EPOCH, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def build_image(work: Work) -> Facts | None:
    """The run's pre-flight (once), then the build."""
    preflight.before_long_work(work)
    return build(work.stack, work.tier, work.holdings)


def build(stack: Stack, tier: PlannedTier, holdings: Availability) -> Facts | None:
    """Build the tier's image; returns what it cost ('built': bytes and seconds)."""
    if holdings.local(tier.image):
        log(f"[{tier.key}] {tier.image} is already built here")
        return None
    if holdings.require(tier.image).presence is Presence.PRESENT:
        log(f"[{tier.key}] {tier.image} is in the registry: not rebuilt")
        return None
    started = time.monotonic()
    if tier.spec.compile is not None and not any(tier.folder.wheels.glob("*.whl")):
        raise BuildFailed(f"{tier.key}: no wheels in {tier.folder.wheels}; run compile:{tier.key}")
    base_platform.check(tier)
    command = buildkit.cli()
    host_settings = build_settings(command)
    reproducible = buildkit.reproducible_here(command)
    can_compress(stack, tier, reproducible)
    if not reproducible:
        _warn_unreproducible()
    if command is None and stack.hermetic:
        raise BuildFailed(
            f"{tier.key}: a hermetic stack ([stack] hermetic = true) builds with BuildKit "
            "(docker buildx, or a docker CLI with BuildKit): the classic builder has no "
            "RUN --mount to hand a step its locked files"
        )
    if command is None and tier.platform is not None:
        raise BuildFailed(
            f"{tier.key}: building per platform needs BuildKit (docker buildx, "
            "or a docker CLI with BuildKit): the classic builder has no "
            "--platform for FROM and keeps one image per base digest"
        )
    if command is None:
        _warn_classic(settings.named_ca())
    output = tier_layout(stack, tier) if reproducible else Loaded()
    with sent_context(stack, tier, labels(stack, tier), classic=command is None) as context:
        request = build_request(stack, tier, context, host_settings, output)
        if command is None:
            daemon.build(
                request.context,
                request.tag,
                name=request.name,
                buildargs=request.buildargs,
                platform=request.platform,
            )
        else:
            try:
                buildkit.build(command, request)
            except NameTaken:
                # Two runners of one hash on one daemon: the same inputs, so the image the
                # other named is this tier's (as push adopts the registry's digest).
                if not daemon.image_exists_locally(tier.image):
                    raise
                log(f"[{tier.key}] another build on this daemon named {tier.image} first: using it")
    holdings.built(tier.image)
    return cost(tier, time.monotonic() - started)


def cost(tier: PlannedTier, seconds: float) -> Facts:
    """'812.4 MB image (1 gzip, 3 zstd layers) in 25.7 s': the image's blobs as its layout
    holds them (what a fresh pull moves) and how its layers are compressed (the base
    image's keep theirs), or the seconds alone for an image built without a layout."""
    image = oci_layout.image_named(tier.folder.image_layout, tier.image)
    if image is None:
        figures.note(tier, "build", {"seconds": round(seconds, 3)})
        return {"built": f"in {seconds:.1f} s"}
    size = figures.sized(path for _, path in image.blobs)
    kinds = figures.layer_kinds(image.manifest)
    figures.note(tier, "build", {"image_bytes": size, "seconds": round(seconds, 3), **kinds})
    said = ", ".join(f"{n} {kind}" for kind, n in kinds["layers"].items())
    return {"built": f"{figures.amount(size)} image ({said} layers) in {seconds:.1f} s"}


def can_compress(stack: Stack, tier: PlannedTier, reproducible: bool | None = None) -> None:
    """Refuse in one line a `[layers] compression` this engine cannot apply; asked before
    the build and before a compile (which may run for an hour before its build would)."""
    if tier.compression.is_default:
        return
    if reproducible is None:
        reproducible = buildkit.reproducible_here(buildkit.cli())
    if not reproducible:
        raise BuildFailed(
            f"{tier.key}: {stack.manifest.name} [layers] compression = "
            f"{tier.compression.algorithm!r} needs docker buildx and the containerd image "
            "store (BuildKit's OCI exporter compresses the layers; this engine's store "
            "would compress them again, as gzip, on push): switch the engine's store "
            '(docs/build-host.md) or set compression = "gzip"'
        )


def tier_layout(stack: Stack, tier: PlannedTier) -> Layout:
    """Where the tier's reproducible build goes: its OCI layout, seeded from the parent
    tier's layout on this machine (its blobs)."""
    parent = None
    if tier.spec.parent is not None:
        folder = stack.build_folder.tier(tier.spec.variant, tier.spec.parent, tier.platform)
        parent = folder.image_layout
    return Layout(tier.folder.image_layout, parent)


# A build's (build args, secrets): build_settings.
BuildSettings = tuple[dict[str, str], dict[str, str]]


def build_settings(command: tuple[str, ...] | None) -> BuildSettings:
    """The build args and secrets of every build: the host's pip settings and the images'
    SOURCE_DATE_EPOCH."""
    buildargs, secrets = settings.for_build(buildkit=command is not None)
    return {**buildargs, "SOURCE_DATE_EPOCH": str(SOURCE_DATE_EPOCH)}, dict(secrets)


def build_request(
    stack: Stack, tier: PlannedTier, context: IO[bytes], host: BuildSettings, output: Output
) -> BuildRequest:
    """What a tier's build asks BuildKit for, the one owner: its context, hash tag, build
    settings, platform, network and compression. The build stage and `reproduce` differ
    only in `output` (and the labels in the context)."""
    buildargs, secrets = host
    return BuildRequest(
        context=context,
        tag=tier.image,
        name=tier.key,
        buildargs=buildargs,
        secrets=secrets,
        platform=tier.platform,
        network=stack.network,
        compression=tier.compression,
        output=output,
    )


def sent_context(
    stack: Stack, tier: PlannedTier, labels: dict[str, str], classic: bool
) -> IO[bytes]:
    """The build context the builder gets: the rendered Dockerfile with the labels added
    (only here, not in the rendered one that is hashed: they describe the build), the
    tier's context files, for a compiled tier its wheels, and the .debs its apt lock names
    and, in a hermetic stack, the wheels its Python lock names (gathered here, each checked
    against the lock: stages/inputs.py)."""
    dockerfile = tier.dockerfile.rstrip("\n") + "\n" + label_instruction(labels)
    folders = {
        WHEELS_DIR: tier.folder.wheels if tier.spec.compile is not None else None,
        DEBS_DIR: debs.gather(stack, tier),
        PYWHEELS_DIR: pywheels.gather(stack, tier),
    }
    return context_tar(dockerfile, tier.context_files, folders, classic=classic)


@cache
def _warn_unreproducible() -> None:
    progress(
        "note: images built here differ build to build (file times in their layers): "
        "reproducible images need docker buildx and the containerd image store"
    )


@cache
def _warn_classic(named_ca: bool) -> None:
    ca = (
        f"; {settings.CA_SETTING} does not reach its pip steps either (they verify TLS "
        "with the image's own CAs)"
        if named_ca
        else ""
    )
    progress(
        "warning: no BuildKit here (no docker buildx, no docker CLI with "
        "DOCKER_BUILDKIT support): building with the classic builder, without cache "
        f"mounts or secrets{ca}"
    )


def label_instruction(labels: dict[str, str]) -> str:
    """One LABEL instruction for all labels (docker-py's `labels=` adds a step per label)."""
    pairs = " ".join(f"{dockerquote(k)}={dockerquote(v)}" for k, v in sorted(labels.items()))
    return f"LABEL {pairs}\n"


def labels(stack: Stack, tier: PlannedTier) -> dict[str, str]:
    """OCI annotations plus ours; added only to the Dockerfile sent to the daemon, never to
    the rendered (hashed) one, so a revision never changes a tag. `created` is the fixed
    SOURCE_DATE_EPOCH: when a build happened is in the registry's records (push, verify)."""
    revision, source = _git_facts(stack.root)
    # No host path in an image: without a network remote the source label is left out.
    where = {"org.opencontainers.image.source": source} if source else {}
    return {
        "org.opencontainers.image.title": f"{stack.name}/{tier.spec.name}",
        "org.opencontainers.image.description": tier.spec.description,
        "org.opencontainers.image.version": (tier.spec.tags or (tier.content_hash,))[0],
        "org.opencontainers.image.revision": revision,
        **where,
        CREATED: EPOCH_TEXT,
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
            result = subprocess.run(
                ["git", "-C", str(root), *args],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return result.stdout.strip() if result.returncode == 0 else ""

    revision = git("rev-parse", "HEAD") or "unknown"
    return revision, source_label(git("config", "--get", "remote.origin.url"))


_SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:(?!/)")  # git@host:team/repo.git


def source_label(remote: str) -> str:
    """The git remote as the source label, or '' when it is none of a network's: a label
    is pushed with the image, so a remote that is a path of this host (/srv/git/x.git,
    file://..., ../x) is left out. CI systems put job tokens in remote URLs (GitLab's
    https://gitlab-ci-token:TOKEN@...): only the URL without userinfo goes in."""
    scheme, sep, rest = remote.partition("://")
    if sep and scheme.lower() in ("https", "http", "ssh", "git") and not rest.startswith("/"):
        return settings.without_userinfo(remote)
    return remote if _SCP_LIKE.match(remote) else ""
