"""`python -m build_graph check|plan|graph|size|doctor|lock|fetch|ci|init|prune|outdated|sbom|
reproduce|gate|keygen`: commands outside doit."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, cast

from build_graph.errors import run_cli
from build_graph.interrupts import quiet_interrupts


class CommandModule(Protocol):
    """A command's module: its options, and what it does (its exit code)."""

    def add_options(self, command: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


@dataclass(frozen=True)
class Command:
    name: str
    module: str  # a CommandModule, imported only when its command runs
    help: str

    def load(self) -> CommandModule:
        return cast(CommandModule, importlib.import_module(self.module))


# The commands, in the order `--help` lists them. Adding one is a row and its module.
COMMANDS = (
    Command("check", "build_graph.cli.check", "validate images.toml and print the resolved stack"),
    Command("plan", "build_graph.cli.plan", "print each tier's hash tag and where it exists"),
    Command(
        "graph",
        "build_graph.cli.graph",
        "print the stack's tier graph (Mermaid or Graphviz dot) from the plan, without Docker",
    ),
    Command(
        "size",
        "build_graph.cli.size",
        "why a tier's image is big: its layers, what fills them, what it adds over its "
        "parent and the bytes it stores twice, read from the registry",
    ),
    Command("doctor", "build_graph.cli.doctor", "check this machine against a tier of the stack"),
    Command(
        "lock",
        "build_graph.cli.lock",
        "pin every `from` image (digest) and git source (commit) in images.lock, and "
        "every tier's Python packages in images.pylock/",
    ),
    Command(
        "fetch",
        "build_graph.cli.fetch",
        "fetch every file the locks name (.debs, wheels), check each and keep it in the "
        "team's store, before any build",
    ),
    Command(
        "ci",
        "build_graph.cli.ci_command",
        "write a CI config: GitHub Actions (a job per tier, "
        "needs: following the tier graph) or Cloud Build (a step per tier)",
    ),
    Command(
        "init",
        "build_graph.cli.init",
        "scaffold a stack in a team's repository: images.toml, "
        "a thin dodo.py, templates/ for overrides, .gitignore",
    ),
    Command(
        "prune",
        "build_graph.cli.prune",
        "delete the hash-tag images (and their reports) that nothing needs; a dry run unless --yes",
    ),
    Command(
        "outdated",
        "build_graph.cli.outdated",
        "newer torch (with its partners), pip and "
        "setuptools on the package index, newer tags of the `from` "
        "images, and the images.toml edit for each; then the Python pins "
        "`lock --update` would move (exit 0)",
    ),
    Command(
        "sbom",
        "build_graph.cli.sbom",
        "print (or save) a tier's SBOM, CycloneDX JSON, as stored beside its hash tag's digest",
    ),
    Command(
        "reproduce",
        "build_graph.cli.reproduce",
        "rebuild a tier here from scratch (no build cache, nothing tagged) and compare "
        "it with the registry's image under its hash tag: the same digest (exit 0), or "
        "every file and config field that differs (exit 1)",
    ),
    Command(
        "gate",
        "build_graph.cli.gate",
        "the step before a deploy: exit 0 only when the digest IMAGE names has a "
        "passing verify report, validly signed, for its tier's current promises",
    ),
    Command(
        "keygen",
        "build_graph.cli.keygen",
        "make a key pair for signed verify reports (ECDSA P-256, as cosign's): "
        "FOLDER/NAME.key and FOLDER/NAME.pub",
    ),
)


def parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """Every command, each with its options; with `chosen`, only that command's options (and
    only its module imported: `--help` and one command pay for no other's imports)."""
    top = argparse.ArgumentParser(prog="python -m build_graph", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        options = sub.add_parser(command.name, help=command.help)
        if chosen is None or chosen == command.name:
            module = command.load()
            module.add_options(options)
            options.set_defaults(run=module.run)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # The top level has no option but -h: a command, if any, is the first word.
    args = parser(argv[0] if argv else "").parse_args(argv)
    quiet_interrupts()  # Ctrl-C or SIGTERM: one line, and `finally` blocks run (scratch files)
    return run_cli(lambda: int(args.run(args)))
