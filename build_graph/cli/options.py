"""Options more than one command takes, defined once."""

from __future__ import annotations

import argparse
from pathlib import Path

from build_graph.layout import DEFAULT_MANIFEST


def manifest(command: argparse.ArgumentParser) -> None:
    """--manifest: the stack's images.toml."""
    command.add_argument(
        "--manifest",
        type=Path,
        default=Path(DEFAULT_MANIFEST),
        help="the stack's images.toml (default: ./images.toml)",
    )
