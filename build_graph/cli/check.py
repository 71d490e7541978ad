"""`python -m build_graph check`: images.toml validated, every template rendered, every
lock held to what images.toml asks; the resolved stack printed. Exit 2 with every problem
listed, 0 and `ok` when there is none."""

from __future__ import annotations

import argparse
from pathlib import Path

from build_graph.cli import options
from build_graph.errors import ConfigError
from build_graph.gpu import releases
from build_graph.manifest.model import Stack
from build_graph.plan.plan import plan
from build_graph.run.stack import load_stack


def add_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--offline",
        action="store_true",
        help="do not ask the package index about torch pairings the shipped "
        "data lacks (they stay notes)",
    )
    options.manifest(command)


def run(args: argparse.Namespace) -> int:
    stack = load_stack(args.manifest, releases.offline if args.offline else _index(args.manifest))
    planned = plan(stack)  # renders every template, so template errors surface here too
    from build_graph.stages import apt_pin
    from build_graph.stages.python_pin import disagreements

    issues = disagreements(stack, planned) + apt_pin.disagreements(stack, planned)
    if issues:
        raise ConfigError(issues)
    print(summary(stack))
    for line in apt_pin.unused_snapshots(stack, planned):
        print(f"  note: {line}")
    print("ok")
    return 0


def _index(manifest: Path) -> releases.Lookup:
    """Torch pairings the shipped data lacks, asked of the index builds use; answers cached
    in the build folder (imported only when asked: `--offline` reads no index code)."""
    from build_graph.pypi.lookup import for_stack

    return for_stack(manifest)


def summary(stack: Stack) -> str:
    """A human summary of the resolved stack: variants, versions, archs, tiers, notes."""
    lines = [
        f"{stack.manifest}: stack {stack.name!r} -> {stack.registry}",
        f"  cache: {stack.cache.url} (max {stack.cache.max_size_bytes / 2**30:.1f} GiB)",
        f"  layers: {stack.compression}"
        + (" (the default)" if stack.compression.is_default else " ([layers])"),
    ]
    for variant in stack.variants:
        default = " (default)" if variant.name == stack.default_variant else ""
        versions = ", ".join(f"{k} {v}" for k, v in variant.versions.items())
        lines.append(f"  variant {variant.name}{default}: {versions}")
        if variant.gpu.arch_list:
            lines.append(
                f"    TORCH_CUDA_ARCH_LIST={variant.gpu.torch_cuda_arch_list}"
                f"  targets: {', '.join(variant.gpu.targets) or '-'}"
            )
        for tier in variant.tiers:
            base = f"parent {tier.parent}" if tier.parent else f"from {tier.from_image}"
            extra = f", compiles with {tier.compile.builder}" if tier.compile else ""
            tags = f"  tags: {', '.join(tier.tags)}" if tier.tags else ""
            tags += f"  platforms: {', '.join(tier.platforms)}" if tier.platforms else ""
            lines.append(f"    {tier.name:<16} {base}{extra}{tags}")
    lines.extend(f"  note: {note}" for note in stack.notes)
    return "\n".join(lines)
