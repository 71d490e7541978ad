"""`python -m build_graph graph`: the stack's tiers as a picture, from the plan alone.

Mermaid (for Markdown: GitHub, GitLab and mkdocs-material draw it) or Graphviz's dot
(`| dot -Tsvg > stack.svg`). Each box names the tier and its hash tag; a solid edge runs
from a tier's parent, a dashed one from the builder whose wheels it installs. Reads
images.toml and its locks only: no Docker daemon, no registry.
"""

from __future__ import annotations

import argparse
import sys

from build_graph.cli import options
from build_graph.plan.plan import plan
from build_graph.run import diagrams
from build_graph.run.stack import load_stack

FORMATS = ("mermaid", "dot")


def add_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--format", choices=FORMATS, default="mermaid", help="mermaid (default) or dot"
    )
    command.add_argument(
        "--fenced",
        action="store_true",
        help="wrap Mermaid in a ```mermaid block, ready to paste into Markdown",
    )
    options.manifest(command)


def run(args: argparse.Namespace) -> int:
    planned = plan(load_stack(args.manifest))
    nodes = diagrams.nodes_of(planned)
    tags = {tier.key: f":{tier.content_hash[:12]}" for tier in planned}
    if args.format == "dot":
        sys.stdout.write(diagrams.dot(nodes, tags))
        return 0
    chart = diagrams.flowchart(nodes, notes=tags)
    sys.stdout.write(f"```mermaid\n{chart}```\n" if args.fenced else chart)
    return 0
