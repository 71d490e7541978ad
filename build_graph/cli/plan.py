"""`python -m build_graph plan`: each tier's hash tag and where it exists (this machine's
daemon, the registry). Exit 3 when the registry could not say for one of them: a plan with
guesses in it is not a plan."""

from __future__ import annotations

import argparse
import json
import sys

from build_graph.cli import options
from build_graph.errors import RegistryError
from build_graph.plan.plan import plan
from build_graph.run.stack import load_stack


def add_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--json", action="store_true", help="machine-readable output")
    command.add_argument(
        "--offline", action="store_true", help="do not ask the Docker daemon or the registry"
    )
    options.manifest(command)


def run(args: argparse.Namespace) -> int:
    stack = load_stack(args.manifest)
    planned = plan(stack)
    rows: list[dict[str, object]] = [
        {
            "variant": p.spec.variant,
            "tier": p.spec.name,
            "key": p.key,
            "parent": p.parent_key,
            "platform": p.platform,
            "promoted_as": p.group_key,
            "image": p.image,
            "hash": p.content_hash,
            "human_tags": list(p.human_tags),
            "dockerfile": str(p.folder.dockerfile),
        }
        for p in planned
    ]
    if not args.offline:
        from build_graph.registry.availability import describe_availability

        for row, where in zip(rows, describe_availability([p.image for p in planned]), strict=True):
            row.update(where)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        for row in rows:
            print(f"{row['key']:<24} {row['image']}  {row.get('status', '')}")
    unasked = [row for row in rows if row.get("registry") == "error"]
    if unasked:  # a plan with guesses in it is not a plan: say so, exit 3
        raise RegistryError(unasked[0]["registry_error"])
    return 0
