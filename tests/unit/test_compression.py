"""`[layers]`: one compression per stack, in the hash only when set, refused where it
cannot be applied, its level held to what BuildKit takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from build_graph.docker import buildkit
from build_graph.errors import BuildFailed
from build_graph.oci.compression import DEFAULT, Compression, level_problem, of_layer
from build_graph.plan.plan import plan
from build_graph.stages import base_platform
from build_graph.stages import build as build_stage
from tests.helpers import MINIMAL, load_text, one_error
from tests.unit.test_plan import hashes, quickstart_copy


def test_the_default_adds_nothing_to_the_hash_or_the_exporter() -> None:
    assert DEFAULT.is_default and DEFAULT.hash_input() == {} and DEFAULT.exporter_fields() == ""
    # gzip at a named level is a choice: it changes the layers, so the hash
    assert not Compression("gzip", 9).is_default
    assert Compression("gzip", 9).exporter_fields() == (
        ",compression=gzip,compression-level=9,oci-mediatypes=true"
    )
    assert Compression("zstd").exporter_fields() == ",compression=zstd,oci-mediatypes=true"


def test_a_stack_without_layers_keeps_its_hashes_and_zstd_changes_every_tier(
    tmp_path: Path,
) -> None:
    manifest = quickstart_copy(tmp_path)
    before = hashes(manifest)
    text = manifest.read_text()
    manifest.write_text(text + '\n[layers]\ncompression = "gzip"\n')
    assert hashes(manifest) == before  # writing the default down changes nothing
    manifest.write_text(text + '\n[layers]\ncompression = "zstd"\n')
    zstd = hashes(manifest)
    assert all(zstd[k] != before[k] for k in before), (before, zstd)
    manifest.write_text(text + '\n[layers]\ncompression = "zstd"\nlevel = 9\n')
    level9 = hashes(manifest)
    assert all(level9[k] not in (before[k], zstd[k]) for k in before)
    tiers = plan(load_text(manifest.parent, manifest.read_text()))
    assert {t.compression for t in tiers} == {Compression("zstd", 9)}
    assert ("compression", "zstd level 9") in tiers[0].inputs


@pytest.mark.parametrize(
    ("layers", "said"),
    [
        ('compression = "zstd"\nlevel = 23', "zstd levels run from 1 to 22"),
        ('compression = "gzip"\nlevel = -1', "gzip levels run from 0 to 9"),
        ('compression = "brotli"', "'gzip' or 'zstd'"),
        ('level = "fast"', "integer"),
    ],
)
def test_a_bad_layers_table_names_the_key_and_the_range(
    tmp_path: Path, layers: str, said: str
) -> None:
    key = "layers.compression" if "brotli" in layers else "layers"
    key = "layers.level" if '"fast"' in layers else key
    message = one_error(tmp_path, MINIMAL + f"\n[layers]\n{layers}\n", key)
    assert said in message, message


def test_level_problem_and_layer_media_types() -> None:
    assert level_problem("zstd", None) is None and level_problem("zstd", 22) is None
    assert level_problem("gzip", 10) == "gzip levels run from 0 to 9"
    assert of_layer("application/vnd.oci.image.layer.v1.tar+zstd") == "zstd"
    assert of_layer("application/vnd.oci.image.layer.v1.tar+gzip") == "gzip"
    assert of_layer("application/vnd.docker.image.rootfs.diff.tar.gzip") == "gzip"
    assert of_layer("application/vnd.oci.image.layer.v1.tar") is None


def test_zstd_on_an_engine_without_the_oci_exporter_is_refused_before_building(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The classic store would compress the layers again, as gzip, on push: the stack's
    promise would silently not hold, so the build stops in one line naming the key."""
    stack = load_text(tmp_path, MINIMAL + '\n[layers]\ncompression = "zstd"\n')
    tier = plan(stack)[0]

    class Nowhere:
        def local(self, image: str) -> bool:
            return False

        def require(self, image: str) -> object:
            return type("Answer", (), {"presence": None})()

    monkeypatch.setattr(base_platform, "check", lambda tier: None)
    monkeypatch.setattr(buildkit, "cli", lambda: ("docker", "buildx", "build"))
    monkeypatch.setattr(build_stage, "build_settings", lambda command: ({}, {}))
    monkeypatch.setattr(buildkit, "reproducible_here", lambda command: False)
    with pytest.raises(BuildFailed) as caught:
        build_stage.build(stack, tier, Nowhere())  # type: ignore[arg-type]
    said = str(caught.value)
    assert "[layers] compression = 'zstd'" in said and "images.toml" in said
    assert "containerd image store" in said and "\n" not in said
