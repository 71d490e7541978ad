"""Fixed paths: inside the builder container, and the build folder beside the manifest."""

from __future__ import annotations

from pathlib import Path

from build_graph.manifest.model import Stack

# Fixed paths inside the builder container, so compiler-cache keys match on every machine.
SRC_DIR = "/src"
OUT_DIR = "/out"
CCACHE_DIR = "/ccache"
WHEELS_DIR = "wheels"  # inside a tier's build context


def build_root(stack: Stack) -> Path:
    """build/ beside the manifest: rendered files, records, doit's database, the lock."""
    return stack.root / "build"
