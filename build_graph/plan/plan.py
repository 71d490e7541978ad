"""The build plan, computed purely from the Stack: rendered files, hashes and image names.

No Docker, no registry: everything here is a function of the manifest, its templates and
its context files, so tests can check a whole plan from an inline TOML string.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from build_graph.aptlock.state import NO_APT, AptState, recorder
from build_graph.errors import ConfigError, ConfigIssue
from build_graph.layout import TierFolder
from build_graph.manifest.expectation import Expectation, expectation_for
from build_graph.manifest.model import Stack, TierSpec, VariantSpec
from build_graph.oci.compression import DEFAULT as GZIP
from build_graph.oci.compression import Compression
from build_graph.oci.platforms import Platform, parse_platform
from build_graph.plan.context import ContextError, context_files, local_sources
from build_graph.plan.hashing import content_hash, fetches_itself, file_digest, instructions
from build_graph.plan.lock import Lock, from_pin, lock_path, pinned_image, read_lock
from build_graph.plan.render import environment, render, render_recorded, tier_context
from build_graph.pylock.state import NO_LOCK, LockState, host_platform, lock_state
from build_graph.signing.spec import NO_SIGNING, SigningSpec

if TYPE_CHECKING:
    import jinja2

HERMETIC = {True: {"hermetic": True}}  # what a hash reads of [stack] hermetic: only when set

LATEST = "latest"


@dataclass(frozen=True)
class PlannedTier:
    spec: TierSpec
    key: str  # 'base', or 'base@cu124' when the stack has variants
    folder: TierFolder  # build/<variant>/<tier>/ (layout.py)
    dockerfile: str
    script: str | None  # the rendered compile script, for tiers that compile
    context_files: tuple[tuple[str, Path], ...]
    # Local compile sources, file by file: (source name, name relative to the manifest's
    # folder, file). Exactly what the compile hash reads and what the compile is given.
    source_files: tuple[tuple[str, str, Path], ...]
    content_hash: str
    files_hash: str  # content_hash without [layers] (what compiles on this tier read)
    repository: str  # <registry>/<tier>
    base_image: str  # what FROM names: the parent's hash tag, or the external image
    parent_key: str | None
    builder_key: str | None
    builder_image: str | None
    human_tags: tuple[str, ...]  # images.toml tags, plus 'latest' for the default variant
    expect: Expectation  # what verify holds the image to: its checks and its ancestors'
    compile_hash: str | None  # hash of what the compile stage reads (builder, script, sources)
    # What went into the hash, part by part ('dockerfile', 'file:<name>', 'parent', ...):
    # recorded at push, so `doit info` can say which input changed since.
    inputs: tuple[tuple[str, str], ...] = ()
    # 'linux/arm64' for one platform's image of a tier built per platform (its key ends in
    # '/arm64'); None for a tier built for the build host only, as before platforms existed
    platform: str | None = None
    group_key: str = ""  # the key without the platform: what promote and `doit <tier>` use
    python: LockState = NO_LOCK  # its Python lock (pylock/state.py)
    apt: AptState = NO_APT  # its apt lock (aptlock/state.py)
    root_image: str = ""  # what the root ancestor's FROM names: verify's baseline
    signing: SigningSpec = NO_SIGNING  # which verify reports count, and how they are signed
    compression: Compression = GZIP  # how the layers it makes are compressed ([layers])

    @property
    def image(self) -> str:
        """The immutable reference: <registry>/<tier>:<content hash>."""
        return f"{self.repository}:{self.content_hash}"

    @property
    def target(self) -> Platform | None:
        """The platform as a value (parsed once, where it was validated: images.toml's
        `platforms`); None for a tier built for the build host only."""
        return parse_platform(self.platform) if self.platform else None

    def human_ref(self, tag: str) -> str:
        """<registry>/<tier>:<tag>, for one of human_tags."""
        return f"{self.repository}:{tag}"


def task_key(stack: Stack, tier: str, variant: str, platform: str | None = None) -> str:
    """'base', 'base@cu124', and per platform 'base/arm64', 'base@cu124/arm64'."""
    key = f"{tier}@{variant}" if stack.has_variants else tier
    return f"{key}/{parse_platform(platform).short}" if platform else key


def groups(planned: list[PlannedTier]) -> dict[str, list[PlannedTier]]:
    """group key -> its images: one for a host-platform tier, one per platform otherwise."""
    found: dict[str, list[PlannedTier]] = {}
    for tier in planned:
        found.setdefault(tier.group_key, []).append(tier)
    return found


def plan(stack: Stack) -> list[PlannedTier]:
    """Every (variant, tier, platform) in build order: parents and builders before their
    users, a tier's platforms in the order images.toml lists them."""
    env = environment(stack)
    lock = read_lock(lock_path(stack.manifest))
    planned: list[PlannedTier] = []
    for variant in stack.variants:
        done: dict[tuple[str, str | None], PlannedTier] = {}
        for tier in variant.tiers:
            for platform in tier.platforms or (None,):
                done[(tier.name, platform)] = _plan_tier(
                    stack, env, variant, tier, done, lock, platform
                )
        planned.extend(done.values())
    return planned


def _plan_tier(
    stack: Stack,
    env: jinja2.Environment,
    variant: VariantSpec,
    tier: TierSpec,
    done: dict[tuple[str, str | None], PlannedTier],
    lock: Lock,
    platform: str | None,
) -> PlannedTier:
    parent = done[(tier.parent, platform)] if tier.parent else None
    builder = done[(tier.compile.builder, platform)] if tier.compile else None
    pin = from_pin(stack, lock, tier, platform) if parent is None else None
    base_image = parent.image if parent else pinned_image(str(tier.from_image), pin)
    expect = expectation_for(variant, tier.name)
    python = lock_state(
        stack.manifest,
        variant,
        tier,
        task_key(stack, tier.name, variant.name),
        platform,
        parent.python if parent else None,
        expect.packages,
    )
    apt = recorder(
        stack.manifest,
        stack.apt_locked,
        tier.name,
        task_key(stack, tier.name, variant.name),
        platform or host_platform(),
        parent.apt.image if parent else base_image,
        parent.apt if parent else None,
    )
    context = tier_context(
        stack,
        variant,
        tier,
        base_image,
        builder.image if builder else None,
        lock.sources,
        platform,
        python,
    )
    dockerfile = render_recorded(env, tier.template, context, apt)
    if stack.hermetic and (problem := fetches_itself(dockerfile)):
        raise ConfigError([ConfigIssue(stack.manifest, f"tiers.{tier.name}.template", problem)])
    script = render(env, tier.compile.script, context) if tier.compile else None
    system = apt.state()
    try:
        files = tuple(context_files(stack.root, tier.context, tier.exclude))
        sources = local_sources(stack.root, tier)
    except ContextError as exc:
        key = "compile.sources" if exc.entry not in tier.context else "context"
        raise ConfigError(
            [ConfigIssue(stack.manifest, f"tiers.{tier.name}.{key}", str(exc))]
        ) from None
    compile_hash = None
    if tier.compile is not None and builder is not None:
        compile_hash = content_hash(
            {
                # the builder's files, not how its layers are packed: [layers] never
                # makes a compile run again where its wheels are kept (they cannot
                # differ), and the compiler cache keeps its key (ccache/sync.py)
                "builder": builder.files_hash,
                "script": _files_view(script or "", builder, parent),
                "sources": [file_digest(n, p) for _, n, p in sources],
                # (name, text) pairs: the JSON the hash has always read (hash schema 2).
                "spec": [
                    [(s.name, s.text) for s in tier.compile.sources],
                    tier.compile.env,
                    tier.compile.outputs,
                ],
                "commits": {
                    s.text: lock.sources.get(s.text)
                    for s in tier.compile.sources
                    if s.kind == "git"
                },
                **HERMETIC.get(stack.hermetic, {}),  # a compile with no network: made again
            }
        )
    digests = [file_digest(n, p) for n, p in files]
    # The platform is an input only where images.toml names platforms: the hashes of a
    # stack built for the build host alone stay what they always were.
    per_platform = {"platform": platform} if platform else {}
    # What BuildKit reads, not the comments: a comment, or the manifest's file name in
    # one ("# Locked in gpu.pylock/..."), never changes a tag.
    read = instructions(dockerfile)
    recipe = {
        "dockerfile": read,
        "context": digests,
        "build_args": dict(tier.build_args),
        "compile": compile_hash,
        "from_pin": pin,
        **per_platform,
        # The locked Python set (the shipped templates install exactly these lines):
        # only where a tier has one, so a tier without packages keeps its hash.
        **({"python_lock": python.lines} if python.lines else {}),
        # The locked apt set, likewise: only where a stack locks apt ([apt] lock).
        **({"apt_lock": system.hashed} if system.hashed else {}),
        # Built with no network ([stack] hermetic): every tier again, not only those whose
        # pip step reads otherwise; a stack that never set it keeps its hashes.
        **HERMETIC.get(stack.hermetic, {}),
    }
    tag_hash = content_hash(
        {
            **recipe,
            "parent": parent.content_hash if parent else None,
            # Only where [layers] is set: a stack that never set it keeps its hashes.
            **stack.compression.hash_input(),
        }
    )
    # The same without the compression anywhere up the chain: what the image's files
    # follow from. Equal to the tag's hash for a stack that never set [layers].
    files_hash = content_hash(
        {
            **recipe,
            # FROM names the parent's tag, which carries [layers]: its files' hash instead
            "dockerfile": _files_view(read, parent, builder),
            "parent": parent.files_hash if parent else None,
        }
    )
    inputs = (
        ("dockerfile", _short(read)),
        ("build_args", _short(json.dumps(dict(tier.build_args), sort_keys=True))),
        ("parent", parent.content_hash if parent else f"{base_image} ({pin or 'unpinned'})"),
        ("compile", compile_hash or "-"),
        *((f"file:{d.path}", d.sha256[:16] + ("x" if d.executable else "")) for d in digests),
        *((("platform", platform),) if platform else ()),
        *(() if stack.compression.is_default else (("compression", str(stack.compression)),)),
        *((("hermetic", "true"),) if stack.hermetic else ()),
    )
    is_default = variant.name == stack.default_variant
    return PlannedTier(
        spec=tier,
        key=task_key(stack, tier.name, variant.name, platform),
        group_key=task_key(stack, tier.name, variant.name),
        platform=platform,
        folder=stack.build_folder.tier(variant.name, tier.name, platform),
        dockerfile=dockerfile,
        script=script,
        context_files=files,
        source_files=sources,
        content_hash=tag_hash,
        files_hash=files_hash,
        repository=f"{stack.registry}/{tier.name}",
        base_image=base_image,
        parent_key=parent.key if parent else None,
        builder_key=builder.key if builder else None,
        builder_image=builder.image if builder else None,
        human_tags=tier.tags + ((LATEST,) if is_default else ()),
        compile_hash=compile_hash,
        python=python,
        apt=system,
        root_image=parent.root_image if parent else base_image,
        expect=replace(
            expect,
            locked=python.chain,
            apt_locked=tuple((d.name, d.version, d.architecture) for d in system.chain),
            platform=platform,
            machine=parse_platform(platform).machine if platform else None,
            max_layer=stack.layer_limit,
        ),
        inputs=inputs,
        signing=stack.signing,
        compression=stack.compression,
    )


def _files_view(text: str, *tiers: PlannedTier | None) -> str:
    """`text` with the tags of `tiers` as their files' hashes would make them."""
    for tier in tiers:
        if tier is not None:
            text = text.replace(tier.content_hash, tier.files_hash)
    return text


def _short(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
