"""Which platforms each tier is built for (images.toml's `platforms`), checked.

A tier takes its own `platforms`, else its parent's, else its variant's, else the stack's;
none anywhere means the build host's platform only, exactly as before platforms existed
(so a single-platform stack keeps its task names, hashes and tags).
"""

from __future__ import annotations

from build_graph.gpu.archs import split_arch_list
from build_graph.gpu.platform_rules import PLATFORM as ARM64
from build_graph.gpu.platform_rules import arm64_uncovered, arm64_warnings
from build_graph.manifest import schema
from build_graph.manifest.model import GpuSpec, TierSpec
from build_graph.manifest.rules import Report, Where


def resolve_platforms(
    manifest: schema.Manifest, variant_name: str, order: list[str], report: Report
) -> dict[str, tuple[str, ...]]:
    """Each tier's platforms: its own, else its parent's, else the variant's, else the
    stack's; () for the build host's only. A tier builds only for platforms its parent
    was built for, and compiles only where its builder was built for each of them."""
    variant = manifest.variants.get(variant_name)
    declared = _listed(
        variant.platforms if variant else None, f"variants.{variant_name}.platforms", report
    )
    if declared is None:
        declared = _listed(manifest.stack.platforms, "stack.platforms", report)
    found: dict[str, tuple[str, ...]] = {}
    for name in order:
        tier = manifest.tiers.get(name)
        if tier is None:
            continue
        key = f"tiers.{name}.platforms"
        parent = found.get(tier.parent, ()) if tier.parent else None
        inherited = parent if parent is not None else declared or ()
        own = _listed(tier.platforms, key, report)
        found[name] = own if own is not None else inherited
        if parent is not None and not _covers(parent, found[name]):
            report.error(
                key,
                f"{_say(found[name])}, but its parent {tier.parent!r} is built "
                f"for {_say(parent)}; a tier builds only on its parent's platforms",
            )
        builder = tier.compile.builder if tier.compile else None
        if builder is not None and not _covers(found.get(builder, ()), found[name]):
            fix = (
                "give the builder these platforms"
                if found[name]
                else "give this tier platforms too (`platforms` under its table)"
            )
            report.error(
                key,
                f"this tier is built for {_say(found[name])}, but its "
                f"compile.builder {builder!r} for {_say(found.get(builder, ()))}; "
                f"a compile runs in the builder of the same platform: {fix}",
            )
    return found


def _listed(platforms: list[str] | None, key: str, report: Report) -> tuple[str, ...] | None:
    """A declared list, checked where it is written: None when the key is left out."""
    if platforms is None:
        return None
    if not platforms:
        report.error(
            key,
            "empty; list at least one platform, or leave the key out (the "
            "build host's platform only, unless set above)",
        )
        return None
    if len(set(platforms)) != len(platforms):
        report.error(key, f"a platform is listed twice: {', '.join(platforms)}")
    return tuple(dict.fromkeys(platforms))


def _covers(outer: tuple[str, ...], inner: tuple[str, ...]) -> bool:
    """Whether tiers built for `outer` can serve one built for `inner` (host-only both,
    or declared platforms and a subset)."""
    return (not outer and not inner) or (bool(outer) and bool(inner) and set(inner) <= set(outer))


def _say(platforms: tuple[str, ...]) -> str:
    return ", ".join(platforms) if platforms else "the build host's platform only"


def check_arm64_gpus(
    tiers: tuple[TierSpec, ...],
    versions: dict[str, str],
    gpu: GpuSpec,
    where: Where,
    report: Report,
) -> None:
    """Where a variant builds linux/arm64 images, `check` says which of its GPU archs no Arm
    GPU host carries (compile time for nothing), which Arm hosts its list leaves out (when
    it names no gpu.targets, which say the hosts it is for), and
    a torch whose aarch64 wheel has no CUDA (gpu/platform_rules.py's table and sources)."""
    if not gpu.arch_list or not any(ARM64 in t.platforms for t in tiers):
        return
    sass, ptx = split_arch_list(list(gpu.arch_list), gpu.ptx)
    names = [str(a) for a in sass], [str(a) for a in ptx]
    key = f"{where('gpu', 'arch_list')} ({ARM64})"
    for line in arm64_warnings(*names, versions.get("cuda"), torch=versions.get("torch")):
        report.note(key, line)
    if not gpu.targets:  # named targets say which hosts the stack is for
        for line in arm64_uncovered(*names, versions.get("cuda")):
            report.note(key, line)
    by_name = {t.name: t for t in tiers}
    for tier in tiers:
        if (
            ARM64 in tier.platforms
            and tier.verify.archs
            and _gpu_policy(tier, by_name) == "required"
        ):
            report.note(
                f"tiers.{tier.name}.verify.gpu",
                "required, and the tier is built for "
                f"{ARM64}: its kernels can only run on an Arm GPU host (GH200, GB200), "
                "so only a runner there can verify and promote it; run verify there, "
                'or set verify.gpu = "optional"',
            )


def _gpu_policy(tier: TierSpec, tiers: dict[str, TierSpec]) -> str:
    """verify.gpu as inherited down the chain (the nearest set wins; default required)."""
    current: TierSpec | None = tier
    while current is not None:
        if current.verify.gpu:
            return current.verify.gpu
        current = tiers.get(current.parent) if current.parent else None
    return "required"
