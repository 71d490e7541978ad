"""Options more than one command takes, defined once, and what `--output` does."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from build_graph.fs import write_if_changed
from build_graph.layout import DEFAULT_MANIFEST


def manifest(command: argparse.ArgumentParser) -> None:
    """--manifest: the stack's images.toml."""
    command.add_argument(
        "--manifest",
        type=Path,
        default=Path(DEFAULT_MANIFEST),
        help="the stack's images.toml (default: ./images.toml)",
    )


def output(command: argparse.ArgumentParser, help: str) -> None:
    """--output: where the command's document goes (`emit`); stdout by default."""
    command.add_argument("--output", type=Path, help=help)


def emit(text: str, output: Path | None) -> int:
    """A generated document: to stdout, or written to `output` (only when it changed)."""
    if output is None:
        sys.stdout.write(text)
    else:
        write_if_changed(output, text)
        print(f"wrote {output}")
    return 0
