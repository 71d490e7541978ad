"""`python -m build_graph reproduce TIER`: the tier rebuilt here from scratch and compared
with the registry's image under its hash tag (stages/reproduce.py). Exit 0 when the
rebuild has the registry's digest, 1 (a failed check) when not, every difference named."""

from __future__ import annotations

import argparse
from pathlib import Path

from build_graph.cli import options
from build_graph.run.stack import load_stack

SHOWN_DIFFERENCES = 100


def add_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("tier", help="tier, or tier@variant (default: the stack's default)")
    command.add_argument(
        "--scratch",
        type=Path,
        help="where the two image archives are written while comparing (default: the "
        "tier's build folder; a multi-GB tier needs room for both)",
    )
    options.manifest(command)


def run(args: argparse.Namespace) -> int:
    from build_graph.cli.named_tier import planned_tier
    from build_graph.stages.reproduce import reproduce

    stack = load_stack(args.manifest)
    tier = planned_tier(stack, args.tier)
    outcome = reproduce(stack, tier, args.scratch)
    took = f"rebuilt from scratch in {outcome.seconds:.1f} s"
    if outcome.same:
        print(f"{tier.key}: same digest {outcome.registry} as {tier.image} ({took})")
        return 0
    print(
        f"{tier.key}: differs from {tier.image}: registry {outcome.registry}, rebuilt "
        f"{outcome.rebuilt} ({took}); {len(outcome.differences)} differences:"
    )
    for line in outcome.differences[:SHOWN_DIFFERENCES]:
        print(f"  {line}")
    if len(outcome.differences) > SHOWN_DIFFERENCES:
        print(f"  ... and {len(outcome.differences) - SHOWN_DIFFERENCES} more")
    return 1
