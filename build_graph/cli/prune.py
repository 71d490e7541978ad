"""`python -m build_graph prune [--yes]`: the hash-tag images (and their reports) that
nothing needs, printed, and deleted with --yes (stages/prune.py reads, decides, deletes)."""

from __future__ import annotations

import argparse
import datetime

from build_graph.cli import options
from build_graph.errors import OptionError
from build_graph.plan.plan import plan
from build_graph.run.stack import load_stack


def add_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--keep",
        type=int,
        default=3,
        metavar="N",
        help="the newest N builds of each tier and platform always stay (default 3)",
    )
    command.add_argument(
        "--older-than",
        default="14d",
        metavar="AGE",
        help="only images created longer ago than this go (default 14d; e.g. 12h, 0s)",
    )
    command.add_argument("--yes", action="store_true", help="delete (default: only print)")
    options.manifest(command)


def run(args: argparse.Namespace) -> int:
    from build_graph.manifest.values import parse_duration
    from build_graph.stages import prune

    seconds = parse_duration(args.older_than)
    if seconds is None:
        raise OptionError(
            f"--older-than {args.older_than!r}: expected a number and a unit, "
            "e.g. 14d, 12h, 30m or 0s"
        )
    older_than = datetime.timedelta(seconds=seconds)
    if args.keep < 0:
        raise OptionError(f"--keep {args.keep}: expected 0 or more builds")
    stack = load_stack(args.manifest)
    pruning = prune.judge(plan(stack), prune.policy(stack.name, args.keep, older_than))
    print("\n".join(prune.lines(pruning, deleting=args.yes)), flush=True)
    if not args.yes:
        print(prune.summary(pruning, None))
        return 0
    # DeletesRefused (a policy, not an outage) reaches the reporter as one line, exit 3
    print(prune.summary(pruning, prune.delete(pruning, lambda line: print(line, flush=True))))
    return 0
