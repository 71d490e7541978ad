"""What the root `from` image installed, listed once per tier and image: kept in the tier's
folder with what was asked, used again only for the same image, platform and listing."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from build_graph.docker import connection, daemon
from build_graph.manifest.load import load
from build_graph.plan.plan import PlannedTier, plan
from build_graph.stages import verify_probe
from tests.unit.test_plan import quickstart_copy

ONE, TWO = "sha256:" + "1" * 64, "sha256:" + "2" * 64


@dataclass
class Engine:
    """The engine stood in: the root image's id, its machine, each listing asked of it."""

    image_id: str = ONE
    machine: str = "x86_64"
    listed: list[str] = field(default_factory=list)


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Engine:
    engine = Engine()
    monkeypatch.setattr(
        daemon,
        "held",
        lambda ref, platform=None: daemon.LocalImage(engine.image_id, "linux/amd64", 1),
    )
    monkeypatch.setattr(connection, "daemon_machine", lambda: engine.machine)

    def list_baseline(tier: object) -> dict[str, str]:
        engine.listed.append(f"{engine.image_id} {engine.machine}")
        return {"pip": "25.0"}

    monkeypatch.setattr(verify_probe, "_list_baseline", list_baseline)
    return engine


def tier(tmp_path: Path) -> PlannedTier:
    return plan(load(quickstart_copy(tmp_path)))[0]


def test_listed_again_only_for_another_image_or_machine(tmp_path: Path, engine: Engine) -> None:
    t = tier(tmp_path)
    for _ in range(3):
        assert verify_probe.baseline(t) == {"pip": "25.0"}
    assert engine.listed == [f"{ONE} x86_64"]
    engine.image_id = TWO  # the root image moved
    verify_probe.baseline(t)
    engine.machine = "aarch64"  # the same index, run by an engine of another machine
    verify_probe.baseline(t)
    assert engine.listed == [f"{ONE} x86_64", f"{TWO} x86_64", f"{TWO} aarch64"]


def test_a_damaged_kept_listing_is_listed_again(tmp_path: Path, engine: Engine) -> None:
    t = tier(tmp_path)
    verify_probe.baseline(t)
    for damaged in ('{"asked": 1}', "not json", '["pip"]', '{"distributions": {"pip": 25}}'):
        t.folder.baseline.write_text(damaged)
        assert verify_probe.baseline(t) == {"pip": "25.0"}
    assert len(engine.listed) == 5
