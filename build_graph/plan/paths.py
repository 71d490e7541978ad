"""Fixed paths: inside the builder container, and the build folder beside the manifest."""

from __future__ import annotations

from pathlib import Path

from build_graph.manifest.model import Stack

# Fixed paths inside the builder container, so compiler-cache keys match on every machine.
SRC_DIR = "/src"
OUT_DIR = "/out"
CCACHE_DIR = "/ccache"
# Fetched sources, kept between compiles: git-<commit>/ and sha256-<hex>/ (an archive).
SOURCES_DIR = "/sources"
WHEELS_DIR = "wheels"  # inside a tier's build context
BUILD_DIR = "build"  # beside the manifest


def build_root(stack: Stack) -> Path:
    """build/ beside the manifest: rendered files, records, doit's database, the lock."""
    return stack.root / BUILD_DIR


def sources_cache(stack: Stack) -> Path:
    """Where fetched sources are kept between compiles, keyed by commit or sha256."""
    return build_root(stack) / "sources"
