"""The whole suite's collection: marks by folder, and the order in which modules start.

scripts/test.sh runs the suite on several workers (pytest-xdist, whole modules to one
worker, in the order collected): the longest modules go first, each to a worker of its
own, and the many short ones fill in around them, so the run lasts about as long as its
longest module and the rest shared out, not as long as their sum."""

from __future__ import annotations

import pytest

# Modules by what they cost on a cold 2-core machine (docs/contributing.md, "How long they
# take"); unnamed integration modules come after these, unit tests last.
FIRST = (
    "tests/integration/test_cuda_stack.py",
    "tests/integration/test_platforms.py",
    "tests/integration/test_engines.py",
    "tests/integration/test_reproducible.py",
    "tests/integration/test_runs.py",
    "tests/integration/test_remote_builder.py",
    "tests/integration/test_registry_redirects.py",
    "tests/integration/test_compiler_cache.py",
    "tests/integration/test_verify_catches.py",
)


def _rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::", 1)[0]
    if path in FIRST:
        return FIRST.index(path)
    return len(FIRST) + (0 if path.startswith("tests/integration/") else 1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/integration is an integration test (a `pytestmark` in a
    conftest marks nothing, so the mark goes on the items), and the longest modules are
    collected first (a stable sort: a module's own order is kept)."""
    for item in items:
        if item.nodeid.startswith("tests/integration/"):
            item.add_marker(pytest.mark.integration)
    items.sort(key=_rank)
