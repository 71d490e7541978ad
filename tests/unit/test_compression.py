"""`[layers]`: one compression per stack, in the hash only when set, refused where it
cannot be applied, its level held to what BuildKit takes."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from build_graph.ccache.keys import cache_key
from build_graph.cli.check import summary
from build_graph.docker import buildkit, connection, daemon
from build_graph.errors import BuildFailed, PullFailed, RegistryError
from build_graph.oci.compression import (
    DEFAULT,
    Compression,
    level_problem,
    of_layer,
    unread_layer,
    unreadable,
)
from build_graph.oci.contents import Contents
from build_graph.oci.digest import Digest
from build_graph.plan.plan import plan
from build_graph.stages import base_platform, verify_probe
from build_graph.stages import build_act as build_stage
from build_graph.stages import compile_act as compile_stage
from tests.helpers import MINIMAL, REPO, config_errors, load_text, one_error
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
        ('compression = "brotli"\nlevel = 15', "'gzip' or 'zstd'"),  # one error, not two
        ('level = "fast"', "integer"),
        ("level = true", "integer"),
        ('level = "7"', "integer"),
    ],
)
def test_a_bad_layers_table_names_the_key_and_the_range(
    tmp_path: Path, layers: str, said: str
) -> None:
    key = "layers.compression" if "brotli" in layers else "layers.level"
    text = MINIMAL + f"\n[layers]\n{layers}\n"
    assert len(config_errors(tmp_path, text)) == 1, config_errors(tmp_path, text)
    message = one_error(tmp_path, text, key)
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


def test_layers_never_make_a_compile_run_again(tmp_path: Path) -> None:
    """The compile reads the builder's files, which [layers] does not change."""
    manifest = quickstart_copy(tmp_path)
    text = manifest.read_text()
    before = {t.key: t for t in plan(load_text(manifest.parent, text))}
    assert all(t.files_hash == t.content_hash for t in before.values())
    manifest.write_text(text + '\n[layers]\ncompression = "zstd"\n')
    after = {t.key: t for t in plan(load_text(manifest.parent, manifest.read_text()))}
    assert after["fastext"].compile_hash == before["fastext"].compile_hash
    assert after["fastext"].content_hash != before["fastext"].content_hash
    assert {k: t.files_hash for k, t in after.items()} == {
        k: t.files_hash for k, t in before.items()
    }


ZSTD_LAYERS = frozenset({"gzip", "zstd"})


def test_only_docker_engines_older_than_23_are_refused_by_their_number() -> None:
    said = unreadable(ZSTD_LAYERS, "20.10.24+dfsg1", Compression("zstd"))
    assert said and "20.10.24" in said and 'compression = "gzip"' in said
    assert unreadable(ZSTD_LAYERS, "23.0.0", Compression("zstd")) is None
    assert unreadable(ZSTD_LAYERS, "", Compression("zstd")) is None  # Podman's API: not judged
    assert unreadable(frozenset({"gzip"}), "20.10.24", DEFAULT) is None
    # zstd layers from the base image on a gzip stack: [layers] is not the fix
    inherited = unreadable(ZSTD_LAYERS, "20.10.24", DEFAULT)
    assert inherited and "base image" in inherited and "gzip" not in inherited.split(";")[1]


def test_a_pull_failure_is_called_a_compression_problem_only_in_the_engine_s_words() -> None:
    words = "failed to register layer: archive/tar: invalid tar header"
    said = unread_layer(words, ZSTD_LAYERS, Compression("zstd"))
    assert said and "invalid tar header" in said and "zstd" in said
    assert unread_layer("connection refused", ZSTD_LAYERS, Compression("zstd")) is None
    # a repository named so, or a current engine's damaged-blob error, is not an old engine
    refused = "Get http://127.0.0.1:1/v2/team/zstd-tier/manifests/x: connection refused"
    assert unread_layer(refused, ZSTD_LAYERS, Compression("zstd")) is None
    assert unread_layer("zstd: magic number mismatch", ZSTD_LAYERS, Compression("zstd")) is None
    assert unread_layer(words, frozenset({"gzip"}), DEFAULT) is None


def test_verify_keeps_a_registry_outage_an_outage_on_a_zstd_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tier = plan(load_text(tmp_path, MINIMAL + '\n[layers]\ncompression = "zstd"\n'))[0]
    image = Contents(Digest.of(b"m"), "application/vnd.oci.image.manifest.v1+json", 1)
    image = dataclasses.replace(image, compressions=ZSTD_LAYERS, layers=((Digest.of(b"l"), 9),))
    monkeypatch.setattr(daemon, "local_image", lambda ref, platform=None: None)
    monkeypatch.setattr(connection, "docker_engine_version", lambda: "28.5.2")

    def refused(ref: str, platform: str | None) -> None:
        raise PullFailed("pull of x failed: connection refused; is it running?", "refused")

    monkeypatch.setattr(daemon, "pull", refused)
    with pytest.raises(RegistryError) as outage:
        verify_probe.fetch(tier, "r@sha256:" + "0" * 64, image)
    assert not isinstance(outage.value, BuildFailed) and "connection refused" in str(outage.value)

    def unreadable_layer(ref: str, platform: str | None) -> None:
        raise PullFailed("pull of x failed: ...", "archive/tar: invalid tar header")

    monkeypatch.setattr(daemon, "pull", unreadable_layer)
    with pytest.raises(BuildFailed) as caught:
        verify_probe.fetch(tier, "r@sha256:" + "0" * 64, image)
    assert "could not unpack its zstd layers" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_builder_built_on_a_tier_of_the_stack_keeps_its_compile_hash(tmp_path: Path) -> None:
    """examples/cuda: the builder's FROM names the torch tier's tag, which carries the
    compression; the compile reads the builder's files, which do not change."""
    root = tmp_path / "cuda"
    shutil.copytree(REPO / "examples" / "cuda", root, ignore=shutil.ignore_patterns("build"))
    text = (root / "images.toml").read_text()
    assert 'compression = "zstd"' in text  # the example's own; gzip is the other way round
    before = {t.key: t for t in plan(load_text(root, text))}
    after = {
        t.key: t
        for t in plan(load_text(root, text.replace('compression = "zstd"', 'compression = "gzip"')))
    }
    assert "FROM " + before["torch"].image in before["builder"].dockerfile
    assert after["kernels"].compile_hash == before["kernels"].compile_hash
    assert {k: t.content_hash for k, t in after.items()}.keys() == before.keys()
    assert all(after[k].content_hash != before[k].content_hash for k in before)


def test_a_compile_script_that_names_its_parent_keeps_its_hash(tmp_path: Path) -> None:
    """A compile script may name the tier's parent (`{{ base_image }}`): that tag carries
    the compression, the compile's inputs do not."""
    root = tmp_path / "cuda"
    shutil.copytree(REPO / "examples" / "cuda", root, ignore=shutil.ignore_patterns("build"))
    script = next((root / "templates").glob("*compile*.sh.j2"))
    script.write_text(script.read_text() + "\n# built on {{ base_image }}\n")
    text = (root / "images.toml").read_text()
    before = {t.key: t for t in plan(load_text(root, text))}
    gzip = text.replace('compression = "zstd"', 'compression = "gzip"')
    after = {t.key: t for t in plan(load_text(root, gzip))}
    kernels = before["kernels"]
    assert kernels.script and kernels.base_image in kernels.script
    assert after["kernels"].compile_hash == kernels.compile_hash
    assert after["kernels"].files_hash == kernels.files_hash


def test_the_compiler_cache_keeps_its_key_across_layers(tmp_path: Path) -> None:
    manifest = quickstart_copy(tmp_path)
    text = manifest.read_text()
    stack = load_text(manifest.parent, text)
    tiers = {t.key: t for t in plan(stack)}
    zstd = load_text(manifest.parent, text + '\n[layers]\ncompression = "zstd"\n')
    again = {t.key: t for t in plan(zstd)}
    key = cache_key(stack, tiers["fastext"], tiers["builder"])
    assert key == cache_key(zstd, again["fastext"], again["builder"])
    assert tiers["builder"].content_hash in key  # a stack without [layers]: as it always was


def test_podman_behind_docker_s_api_is_not_judged_by_docker_s_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = {
        "docker": {"Version": "20.10.24", "Components": [{"Name": "Engine"}]},
        "podman": {"Version": "4.3.1", "Components": [{"Name": "Podman Engine"}]},
        "unsaid": {"Version": "20.10.24"},
    }
    for name, expected in (("docker", "20.10.24"), ("podman", ""), ("unsaid", "")):
        answer = connection.DaemonVersion.read(answers[name])
        monkeypatch.setattr(connection, "daemon_version", lambda a=answer: a)
        assert connection.docker_engine_version() == expected, name


def test_check_prints_the_layers_and_a_compile_is_refused_before_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = quickstart_copy(tmp_path)
    stack = load_text(manifest.parent, manifest.read_text() + '\n[layers]\ncompression = "zstd"\n')
    assert "  layers: zstd ([layers])" in summary(stack).splitlines()
    tiers = {t.key: t for t in plan(stack)}
    monkeypatch.setattr(buildkit, "cli", lambda: None)  # no buildx: no OCI exporter
    staged: list[object] = []
    monkeypatch.setattr(compile_stage, "stage_sources", lambda *a: staged.append(a))
    with pytest.raises(BuildFailed, match=r"\[layers\] compression = 'zstd'"):
        compile_stage.compile_tier(stack, tiers["fastext"], tiers["builder"])
    assert staged == []  # refused before anything was staged or run
