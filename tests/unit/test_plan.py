"""The pure plan: content-hash tags, exact rebuild cascades, image names."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from tests.helpers import REPO


def quickstart_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "qs"
    shutil.copytree(
        REPO / "examples" / "quickstart", dest, ignore=shutil.ignore_patterns("build", "gen")
    )
    return dest / "images.toml"


def hashes(manifest: Path) -> dict[str, str]:
    return {p.key: p.content_hash for p in plan(load(manifest))}


def test_order_names_and_tags(tmp_path: Path) -> None:
    planned = plan(load(quickstart_copy(tmp_path)))
    assert [p.key for p in planned] == ["builder", "fastext", "base", "training", "runner"]
    base = planned[2]
    assert base.image == f"127.0.0.1:5000/quickstart/base:{base.content_hash}"
    assert base.base_image == planned[1].image  # the child's FROM is the parent's hash tag
    assert f"FROM {planned[1].image}" in base.dockerfile
    assert planned[1].human_tags == ("py3.11", "latest")
    assert planned[1].builder_image == planned[0].image


def test_plan_is_deterministic(tmp_path: Path) -> None:
    manifest = quickstart_copy(tmp_path)
    assert hashes(manifest) == hashes(manifest)


def test_changing_one_tier_changes_it_and_its_descendants_only(tmp_path: Path) -> None:
    manifest = quickstart_copy(tmp_path)
    before = hashes(manifest)
    text = manifest.read_text().replace(
        'context = ["src/teamlib"]', 'context = ["src/teamlib"]\npackages = ["six"]'
    )
    manifest.write_text(text)
    after = hashes(manifest)
    changed = {k for k in before if before[k] != after[k]}
    assert changed == {"base", "training", "runner"}


def test_context_content_changes_the_hash_but_touching_does_not(tmp_path: Path) -> None:
    manifest = quickstart_copy(tmp_path)
    before = hashes(manifest)
    train = manifest.parent / "train" / "train.py"
    os.utime(train, (2_000_000_000, 2_000_000_000))
    assert hashes(manifest) == before
    train.write_text(train.read_text() + "\n# changed\n")
    after = hashes(manifest)
    assert {k for k in before if before[k] != after[k]} == {"training", "runner"}


def test_compile_sources_change_the_compiled_tier(tmp_path: Path) -> None:
    manifest = quickstart_copy(tmp_path)
    before = hashes(manifest)
    header = manifest.parent / "src" / "fastext" / "csrc" / "kernel_body.hpp"
    header.write_text(header.read_text() + "\n// changed\n")
    after = hashes(manifest)
    assert {k for k in before if before[k] != after[k]} == {"fastext", "base", "training", "runner"}


def test_builder_change_cascades_to_the_compiled_tier(tmp_path: Path) -> None:
    manifest = quickstart_copy(tmp_path)
    before = hashes(manifest)
    manifest.write_text(manifest.read_text().replace('"libc6-dev"]', '"libc6-dev", "make"]'))
    after = hashes(manifest)
    assert {k for k in before if before[k] != after[k]} == {
        "builder",
        "fastext",
        "base",
        "training",
        "runner",
    }


def test_variants_get_their_own_keys_and_latest_goes_to_the_default() -> None:
    planned = plan(load(REPO / "images.toml"))
    keys = [p.key for p in planned]
    assert "pytorch-clean@cu124" in keys and "pytorch-clean@cu128" in keys
    by_key = {p.key: p for p in planned}
    assert by_key["base@cu124"].human_tags == ("2.6.0-cu124", "latest")
    assert by_key["base@cu128"].human_tags == ("2.7.0-cu128",)
    assert by_key["base@cu124"].content_hash != by_key["base@cu128"].content_hash


def test_renaming_the_manifest_keeps_every_tag(tmp_path: Path) -> None:
    """gpu.toml beside images.toml, with its locks copied: the Dockerfiles name
    gpu.pylock/..., but what the build reads is the same, and so are the tags."""
    manifest = quickstart_copy(tmp_path)
    folder = manifest.parent
    shutil.copy(manifest, folder / "gpu.toml")
    shutil.copy(folder / "images.lock", folder / "gpu.lock")
    shutil.copytree(folder / "images.pylock", folder / "gpu.pylock")
    shutil.copytree(folder / "images.aptlock", folder / "gpu.aptlock")
    renamed = plan(load(folder / "gpu.toml"))
    assert any("gpu.pylock/" in p.dockerfile for p in renamed)  # the comment did change
    assert any("gpu.aptlock/" in p.dockerfile for p in renamed)
    assert all(p.apt.fresh for p in renamed)
    assert {p.key: p.content_hash for p in renamed} == hashes(manifest)


def test_a_comment_in_a_template_keeps_the_tag_and_an_instruction_does_not(
    tmp_path: Path,
) -> None:
    manifest = quickstart_copy(tmp_path)
    before = hashes(manifest)
    templates = manifest.parent / "templates"
    override = templates / "runner.Dockerfile.j2"
    shipped = REPO / "templates" / "runner.Dockerfile.j2"
    override.write_text(shipped.read_text() + "\n# a note for the next reader\n\n")
    assert hashes(manifest) == before
    override.write_text(shipped.read_text() + "\nLABEL team=vision\n")
    after = hashes(manifest)
    assert {k for k in before if before[k] != after[k]} == {"runner"}
