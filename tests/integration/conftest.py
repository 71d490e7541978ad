"""Integration fixtures: a private loopback registry and GCS emulator per module. The parts
they are made of live in tests/support/; every test here is marked `integration`.
Needs `scripts/services.sh up` (the Docker engine, the base image)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.gcs import GcsEmulator
from tests.support.registry import Registry
from tests.support.servers import free_port


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/integration is an integration test: a `pytestmark` in a
    conftest marks nothing, so the mark is put on the items themselves."""
    for item in items:
        if "tests/integration/" in item.nodeid:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    reg = Registry(tmp_path_factory.mktemp("registry"), free_port())
    reg.start()
    yield reg
    reg.stop()


@pytest.fixture(scope="module")
def gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GcsEmulator]:
    emulator = GcsEmulator(tmp_path_factory.mktemp("gcs"), free_port())
    emulator.start()
    emulator.client().create_bucket("team-ccache")
    yield emulator
    emulator.stop()
