"""What the root `from` image installed, listed once per image on this machine: the tiers
of a stack share one root image, and its id names its content."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from build_graph.docker import daemon
from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from build_graph.stages import verify_probe
from tests.unit.test_plan import quickstart_copy

ONE, TWO = "sha256:" + "1" * 64, "sha256:" + "2" * 64


@dataclass
class Engine:
    """The engine stood in: the root image's id, and each listing it was asked for."""

    image_id: str = ONE
    listed: list[str] = field(default_factory=list)


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Engine:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    engine = Engine()
    monkeypatch.setattr(daemon, "ensure_local", lambda ref, platform=None: None)
    monkeypatch.setattr(daemon, "image_id", lambda ref: engine.image_id)

    def list_baseline(tier: object) -> dict[str, str]:
        engine.listed.append(engine.image_id)
        return {"pip": "25.0"}

    monkeypatch.setattr(verify_probe, "_list_baseline", list_baseline)
    return engine


def test_the_root_image_is_listed_once_per_id(tmp_path: Path, engine: Engine) -> None:
    tiers = plan(load(quickstart_copy(tmp_path)))
    assert all(verify_probe.baseline(t) == {"pip": "25.0"} for t in tiers)
    assert engine.listed == [ONE]  # five tiers, one root image
    engine.image_id = TWO  # the root image moved: listed again
    assert verify_probe.baseline(tiers[0]) == {"pip": "25.0"}
    assert engine.listed == [ONE, TWO]


def test_a_damaged_kept_listing_is_listed_again(tmp_path: Path, engine: Engine) -> None:
    tier = plan(load(quickstart_copy(tmp_path)))[0]
    verify_probe.baseline(tier)
    [kept] = (tmp_path / "xdg" / "build-graph" / "baselines").iterdir()
    for damaged in ('{"pip": 25}', "not json", '["pip"]'):
        kept.write_text(damaged)
        assert verify_probe.baseline(tier) == {"pip": "25.0"}
    assert engine.listed == [ONE] * 4
