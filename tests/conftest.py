"""The whole suite's collection: marks by folder, and the order in which modules start.

scripts/test.sh runs the suite on several workers (pytest-xdist, whole modules to one
worker, in the order collected): the longest modules go first, each to a worker of its
own, and the many short ones fill in around them, so the run lasts about as long as its
longest module and the rest shared out, not as long as their sum."""

from __future__ import annotations

import pytest

# Modules by what they cost on a cold 2-core machine (the slowest tests of the last cold
# .ci/run: docs/contributing.md, "How long they take"); unnamed integration modules come
# after these, unit tests last. xdist gives each worker two modules to start with: the two
# longest, each with a module of seconds behind it, so neither waits behind the other.
FIRST = (
    "tests/integration/test_cuda_stack.py",
    "tests/integration/test_platforms.py",
    "tests/integration/test_stopped_compile.py",
    "tests/integration/test_sources.py",
    "tests/integration/test_ccache_bucket.py",
    "tests/integration/test_engines.py",
    "tests/integration/test_reproducible.py",
    "tests/integration/test_runs.py",
    "tests/integration/test_remote_builder.py",
    "tests/integration/test_registry_redirects.py",
    "tests/integration/test_compile_estimate.py",
    "tests/integration/test_token_renewal.py",
    "tests/integration/test_compiler_cache.py",
    "tests/integration/test_verify_catches.py",
)


def _rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::", 1)[0]
    if path in FIRST:
        return FIRST.index(path)
    return len(FIRST) + (0 if path.startswith("tests/integration/") else 1)


# Run only when asked for by name (`-m cuda_full`, `-m gpu`): a `-m` of one's own replaces
# the one in pyproject.toml's addopts, and `-m "not cuda"` must not start a 30-minute build.
BY_NAME = ("cuda_full", "gpu")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test under tests/integration is an integration test (a `pytestmark` in a
    conftest marks nothing, so the mark goes on the items); tests marked one of BY_NAME are
    skipped unless the mark expression names that mark; the longest modules are collected
    first (a stable sort: a module's own order is kept)."""
    expression = config.getoption("markexpr") or ""
    for item in items:
        if item.nodeid.startswith("tests/integration/"):
            item.add_marker(pytest.mark.integration)
        for mark in BY_NAME:
            if item.get_closest_marker(mark) and mark not in expression:
                item.add_marker(pytest.mark.skip(reason=f"runs only when asked: -m {mark}"))
    items.sort(key=_rank)
