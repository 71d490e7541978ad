"""Integration fixtures: a private loopback registry and GCS emulator per module. The parts
they are made of live in tests/support/; every test here is marked `integration` (by
tests/conftest.py).
Needs `scripts/services.sh up` (the Docker engine, the base image)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from tests.browser import BROWSER_SH, browser_ready
from tests.support.gcs import GcsEmulator
from tests.support.registry import Registry
from tests.support.servers import started_on_a_free_port


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    folder = tmp_path_factory.mktemp("registry")
    reg = started_on_a_free_port(lambda port: Registry(folder, port))
    yield reg
    reg.stop()


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
