"""Integration fixtures: a private loopback registry and GCS emulator per module. The parts
they are made of live in tests/support/; every test here is marked `integration` (by
tests/conftest.py).
Needs `scripts/services.sh up` (the Docker engine, the base image)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from tests.browser import BROWSER_SH, browser_ready
from tests.support import workspace
from tests.support.gcs import GcsEmulator
from tests.support.registry import Registry
from tests.support.servers import started_on_a_free_port


@pytest.fixture(scope="session", autouse=True)
def shared_compiler_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """One compiler cache for the session's quickstart workspaces (tests/support/workspace.py):
    beside the workers' folders under xdist, so both share it; made before any module's
    folders, so no module's clean-up removes it."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "compiler-cache"
    shared.mkdir(exist_ok=True)
    workspace.shared_compiler_cache = shared


@pytest.fixture(scope="module", autouse=True)
def module_folders_removed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """A module's temporary folders (workspaces with their OCI layouts and .debs, registry
    storage) are removed when it ends with every test passed; kept for reading when one
    failed, or when KEEP_TEST_FOLDERS is set. A CI run's disk then holds the module running
    now, not the forty before it (pytest keeps every folder of a run until the next ones)."""
    base = tmp_path_factory.getbasetemp()
    before = set(base.iterdir())
    failed = request.session.testsfailed
    yield
    if request.session.testsfailed == failed and not os.environ.get("KEEP_TEST_FOLDERS"):
        for folder in set(base.iterdir()) - before:
            if folder.is_dir() and not folder.is_symlink():
                shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    folder = tmp_path_factory.mktemp("registry")
    reg = started_on_a_free_port(lambda port: Registry(folder, port))
    yield reg
    reg.discard()


@pytest.fixture(scope="module")
def gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GcsEmulator]:
    folder = tmp_path_factory.mktemp("gcs")
    emulator = started_on_a_free_port(lambda port: GcsEmulator(folder, port))
    emulator.client().create_bucket("team-ccache")
    yield emulator
    emulator.stop()


@pytest.fixture(scope="session")
def browser() -> None:
    """Chromium and Mermaid's bundle, installed by scripts/browser.sh when missing: a test
    that renders diagrams fails when it cannot, it is never skipped."""
    subprocess.run(["bash", str(BROWSER_SH)], check=True, timeout=900)
    reason = browser_ready()
    assert reason is None, reason
