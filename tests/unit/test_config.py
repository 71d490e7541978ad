"""images.toml validation: every error names the file, the key and the fix."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from build_graph.errors import ConfigError
from build_graph.manifest.load import load
from tests.helpers import MINIMAL, config_errors, load_text, one_error, write_manifest


def test_minimal_manifest_resolves_to_a_frozen_stack(tmp_path: Path) -> None:
    stack = load_text(tmp_path, MINIMAL)
    assert stack.name == "demo"
    assert stack.default_variant == "default"
    assert not stack.has_variants
    tier = stack.variants[0].tier("base")
    assert tier.from_image == "debian:bookworm-slim"
    assert tier.verify.python == "3.11"  # verify defaults come from versions
    assert stack.cache.url == f"file://{tmp_path / 'build' / 'ccache-store'}"
    with pytest.raises(dataclasses.FrozenInstanceError):
        tier.name = "other"  # type: ignore[misc]


def test_missing_file_names_the_path_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path / "nope.toml")
    assert "nope.toml" in str(caught.value)
    assert "--manifest" in str(caught.value)


def test_toml_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    errors = config_errors(tmp_path, MINIMAL + "\n[tiers.broken\n")
    assert len(errors) == 1
    assert "not valid TOML" in errors[0] and "line" in errors[0]


def test_unknown_key_is_an_error_with_a_near_miss(tmp_path: Path) -> None:
    text = MINIMAL + 'contxt = ["src"]\n'
    message = one_error(tmp_path, text, "tiers.base.contxt")
    assert "did you mean 'context'?" in message


def test_unknown_top_level_section_suggests_the_right_one(tmp_path: Path) -> None:
    message = one_error(tmp_path, MINIMAL + "[variant.cu124]\n", "variant")
    assert "did you mean 'variants'?" in message


def test_unknown_key_without_near_miss_lists_known_keys(tmp_path: Path) -> None:
    text = MINIMAL.replace("[versions]", "[gpu]\nzzz = 1\n\n[versions]")
    message = one_error(tmp_path, text, "gpu.zzz")
    assert "known keys: arch_list, ptx, targets" in message


def test_missing_required_key(tmp_path: Path) -> None:
    message = one_error(tmp_path, MINIMAL.replace('python = "3.11"', ""), "versions.python")
    assert "required key is missing" in message


def test_all_errors_of_a_file_are_reported_together(tmp_path: Path) -> None:
    text = (
        MINIMAL
        + """
    [tiers.training]
    parent = "bse"
    template = "training.Dockerfile.j2"
    context = ["no/such/folder"]
    tags = ["bad tag!"]
    """
    )
    errors = config_errors(tmp_path, text)
    keys = {e.split(": ")[0] for e in errors}
    assert {"tiers.training.parent", "tiers.training.context", "tiers.training.tags"} <= keys


def test_unknown_parent_suggests_the_closest_tier(tmp_path: Path) -> None:
    text = (
        MINIMAL
        + """
    [tiers.training]
    parent = "bse"
    template = "training.Dockerfile.j2"
    """
    )
    message = one_error(tmp_path, text, "tiers.training.parent")
    assert "no tier named 'bse' (did you mean 'base'?)" in message


def test_parent_cycle_names_the_loop(tmp_path: Path) -> None:
    text = (
        MINIMAL
        + """
    [tiers.a]
    parent = "b"
    template = "training.Dockerfile.j2"
    [tiers.b]
    parent = "a"
    template = "training.Dockerfile.j2"
    """
    )
    errors = [e for e in config_errors(tmp_path, text) if "cycle" in e]
    assert len(errors) == 1
    assert "a -> b -> a" in errors[0]


def test_parent_and_from_are_exclusive(tmp_path: Path) -> None:
    text = (
        MINIMAL
        + """
    [tiers.both]
    parent = "base"
    from = "debian:bookworm-slim"
    template = "training.Dockerfile.j2"
    [tiers.neither]
    template = "training.Dockerfile.j2"
    """
    )
    errors = config_errors(tmp_path, text)
    assert any(e.startswith("tiers.both: set exactly one of 'parent'") for e in errors)
    assert any(e.startswith("tiers.neither: set exactly one of 'parent'") for e in errors)


def test_missing_template_is_named_with_the_folders_searched(tmp_path: Path) -> None:
    text = MINIMAL.replace("python-runtime.Dockerfile.j2", "python-runtme.Dockerfile.j2")
    message = one_error(tmp_path, text, "tiers.base.template")
    assert "no template 'python-runtme.Dockerfile.j2'" in message
    assert "did you mean 'python-runtime.Dockerfile.j2'?" in message


def test_missing_compile_builder_and_script(tmp_path: Path) -> None:
    text = MINIMAL + 'compile = { builder = "buildr", script = "nope.sh.j2" }\n'
    errors = config_errors(tmp_path, text)
    assert any(e.startswith("tiers.base.compile.builder: no tier named 'buildr'") for e in errors)
    assert any(e.startswith("tiers.base.compile.script: no template 'nope.sh.j2'") for e in errors)


def test_duplicate_tags_across_variants(tmp_path: Path) -> None:
    text = (
        MINIMAL
        + """
    tags = ["stable"]
    [variants.a]
    [variants.b]
    versions = { python = "3.12" }
    """
    )
    message = one_error(tmp_path, text, "tiers.base.tags")
    assert "tag 'stable' is given twice (variants a and b)" in message
    assert "{torch}-{cuda_tag}" in message


def test_latest_is_reserved_for_promote(tmp_path: Path) -> None:
    message = one_error(tmp_path, MINIMAL + 'tags = ["latest"]\n', "tiers.base.tags")
    assert "'latest' is moved by promote" in message


def test_version_fields_fill_tags_and_from(tmp_path: Path) -> None:
    text = MINIMAL.replace('python = "3.11"', 'python = "3.11"\ncuda = "12.4.1"\ntorch = "2.6.0"')
    text = text.replace('"debian:bookworm-slim"', '"nvidia/cuda:{cuda}-runtime-ubuntu22.04"')
    stack = load_text(
        tmp_path,
        text + 'tags = ["{torch}-{cuda_tag}", "py{python_mm}"]\n'
        'description = "torch {torch} on CUDA {cuda_mm}"\n',
    )
    tier = stack.variants[0].tier("base")
    assert tier.from_image == "nvidia/cuda:12.4.1-runtime-ubuntu22.04"
    assert tier.description == "torch 2.6.0 on CUDA 12.4"
    assert tier.tags == ("2.6.0-cu124", "py3.11")


def test_unknown_version_field_lists_the_known_ones(tmp_path: Path) -> None:
    message = one_error(tmp_path, MINIMAL + 'tags = ["{pyton}"]\n', "tiers.base.tags")
    assert "unknown field {pyton} (did you mean 'python'?)" in message


@pytest.mark.parametrize(
    ("addition", "key", "fragment"),
    [
        (
            'build_args = { X = "a\\nRUN curl evil | sh" }',
            "tiers.base.build_args.X",
            "newline or control character",
        ),
        ('packages = ["numpy\\nRUN rm -rf /"]', "tiers.base.packages.0", "newline"),
        ('packages = ["numpy<2; rm -rf /"]', "tiers.base.packages.0", "not a pip requirement"),
        (
            'packages = ["numpy=={python}; rm -rf /"]',
            "tiers.base.packages.0",
            "not a pip requirement",
        ),
        ('packages = ["numpy=={pyton}"]', "tiers.base.packages.0", "unknown field {pyton}"),
        (
            'system_packages = ["curl evil"]',
            "tiers.base.system_packages.0",
            "not a valid Debian package name",
        ),
        (
            'build_args = { "BAD-NAME" = "1" }',
            "tiers.base.build_args.BAD-NAME.[key]",
            "not a valid build-arg name",
        ),
        ('tags = ["v1 && evil"]', "tiers.base.tags", "not a Docker tag"),
        ('description = "two\\nlines"', "tiers.base.description", "newline"),
    ],
)
def test_values_cannot_inject_dockerfile_instructions(
    tmp_path: Path, addition: str, key: str, fragment: str
) -> None:
    message = one_error(tmp_path, MINIMAL + addition + "\n", key)
    assert fragment in message


def test_packages_take_version_fields(tmp_path: Path) -> None:
    packages = 'packages = ["python-dateutil>={python}", "x=={python}"]\n'
    stack = load_text(tmp_path, MINIMAL + packages)
    [base] = [t for t in stack.variants[0].tiers if t.name == "base"]
    assert base.packages == ("python-dateutil>=3.11", "x==3.11")


def test_bad_version_and_image_grammar(tmp_path: Path) -> None:
    text = MINIMAL.replace('python = "3.11"', 'python = "3.11\\nFROM evil"')
    assert "not a valid version" in one_error(tmp_path, text, "versions.python")
    text = MINIMAL.replace('"debian:bookworm-slim"', '"debian:bookworm slim"')
    assert "not an image reference" in one_error(tmp_path, text, "tiers.base.from")


def test_registry_grammar(tmp_path: Path) -> None:
    text = MINIMAL.replace('"127.0.0.1:5000/demo"', '"127.0.0.1:5000/Demo Images"')
    assert "not a valid image repository" in one_error(tmp_path, text, "stack.registry")


@pytest.mark.parametrize(
    ("cache", "key", "fragment"),
    [
        ('url = "s3://bucket/x"', "cache.url", "gs://bucket/prefix"),
        ('url = "gs://B/x"', "cache.url", "not a cache location"),
        ('max_size = "lots"', "cache.max_size", "not a size"),
        ('save_every = "20 minutes"', "cache.save_every", "not a duration; write e.g. '20m'"),
        ('save_every = "-5m"', "cache.save_every", "not a duration"),
        ('save_every = "9999999999999m"', "cache.save_every", "not a duration"),
    ],
)
def test_cache_settings(tmp_path: Path, cache: str, key: str, fragment: str) -> None:
    message = one_error(tmp_path, MINIMAL + f"\n[cache]\n{cache}\n", key)
    assert fragment in message


def test_cache_url_forms(tmp_path: Path) -> None:
    stack = load_text(
        tmp_path, MINIMAL + '\n[cache]\nurl = "gs://team-cache/ccache"\nmax_size = "1.5G"\n'
    )
    assert stack.cache.url == "gs://team-cache/ccache"
    assert stack.cache.max_size_bytes == int(1.5 * 2**30)
    assert stack.cache.save_every_s == 20 * 60  # the default: a killed compile loses <= 20 min
    stack = load_text(tmp_path, MINIMAL + '\n[cache]\nurl = "file://cache"\nsave_every = "1h"\n')
    assert stack.cache.save_every_s == 3600
    assert stack.cache.url == f"file://{tmp_path / 'cache'}"
    stack = load_text(tmp_path, MINIMAL + '\n[cache]\nsave_every = "0s"\n')
    assert stack.cache.save_every_s == 0  # saved when the compile ends only


def test_variants_override_versions_and_gpu(tmp_path: Path) -> None:
    text = (
        MINIMAL.replace('python = "3.11"', 'python = "3.11"\ncuda = "12.4.1"')
        + """
    tags = ["{cuda_tag}"]
    [gpu]
    arch_list = ["8.0", "9.0"]
    [variants.cu124]
    [variants.cu128]
    versions = { cuda = "12.8.1" }
    gpu = { arch_list = ["8.0", "9.0", "12.0"] }
    """
    )
    stack = load_text(tmp_path, text)
    assert stack.has_variants and stack.default_variant == "cu124"
    cu128 = stack.variant("cu128")
    assert cu128.versions["cuda"] == "12.8.1" and cu128.versions["python"] == "3.11"
    assert cu128.gpu.arch_list == ("8.0", "9.0", "12.0")
    assert cu128.tier("base").tags == ("cu128",)
    assert stack.variant("cu124").gpu.arch_list == ("8.0", "9.0")


def test_variant_errors_point_at_the_variant_key(tmp_path: Path) -> None:
    text = (
        MINIMAL.replace('python = "3.11"', 'python = "3.11"\ncuda = "12.4.1"')
        + """
    [variants.cu124]
    [variants.cu124b]
    gpu = { arch_list = ["12.0"] }
    """
    )
    message = one_error(tmp_path, text, "variants.cu124b.gpu.arch_list")
    assert "CUDA 12.4.1 cannot compile arch 12.0; use CUDA >= 12.8" in message


def test_unknown_default_variant(tmp_path: Path) -> None:
    text = MINIMAL.replace(
        'registry = "127.0.0.1:5000/demo"',
        'registry = "127.0.0.1:5000/demo"\ndefault_variant = "cu12"',
    )
    message = one_error(tmp_path, text + "[variants.cu124]\n", "stack.default_variant")
    assert "did you mean 'cu124'?" in message


def test_context_paths_are_checked(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    load_text(tmp_path, MINIMAL + 'context = ["src"]\n')
    message = one_error(tmp_path, MINIMAL + 'context = ["srcs"]\n', "tiers.base.context")
    assert "'srcs' does not exist" in message


def test_manifest_written_once_loads_the_same(tmp_path: Path) -> None:
    path = write_manifest(tmp_path, MINIMAL)
    assert load(path) == load(path)
