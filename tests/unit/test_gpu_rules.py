"""CUDA's compatibility rules: coverage, compilable archs, torch pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

from build_graph.gpu.archs import (
    Arch,
    Coverage,
    coverage,
    parse_arch,
    parse_target,
    split_arch_list,
    torch_cuda_arch_list,
)
from tests.helpers import config_errors, load_text, one_error

GPU_STACK = """
[stack]
name = "gpu"
registry = "127.0.0.1:5000/gpu"

[versions]
python = "3.11"
cuda = "{cuda}"
torch = "{torch}"

[gpu]
arch_list = {archs}
ptx = {ptx}
targets = {targets}

[tiers.base]
from = "debian:bookworm-slim"
template = "python-runtime.Dockerfile.j2"
"""


def gpu_stack(
    cuda: str = "12.4.1",
    torch: str = "2.6.0",
    archs: str = '["8.0", "9.0"]',
    ptx: bool = False,
    targets: str = "[]",
) -> str:
    return (
        GPU_STACK.replace("{cuda}", cuda)
        .replace("{torch}", torch)
        .replace("{archs}", archs)
        .replace("{ptx}", str(ptx).lower())
        .replace("{targets}", targets)
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8.6", (Arch(8, 6), False)),
        ("9.0a", (Arch(9, 0, "a"), False)),
        ("8.6+PTX", (Arch(8, 6), True)),
        ("sm_120", (Arch(12, 0), False)),
        ("10.0f", (Arch(10, 0, "f"), False)),
    ],
)
def test_parse_arch(text: str, expected: tuple[Arch, bool]) -> None:
    assert parse_arch(text) == expected


@pytest.mark.parametrize(
    ("text", "cc"),
    [
        ("L4", (8, 9)),
        ("rtx 4090", (8, 9)),
        ("H200", (9, 0)),
        ("B200", (10, 0)),
        ("RTX 5090", (12, 0)),
        ("sm_89", (8, 9)),
        ("8.9", (8, 9)),
        ("sm_100", (10, 0)),
    ],
)
def test_parse_target(text: str, cc: tuple[int, int]) -> None:
    assert parse_target(text) == cc


def test_sass_runs_on_same_major_equal_or_higher_minor() -> None:
    sass, ptx = split_arch_list(["8.0", "9.0"], ptx_newest=False)
    assert coverage(sass, ptx, (8, 0)).coverage is Coverage.EXACT_SASS
    lower = coverage(sass, ptx, (8, 9))  # L4 runs A100 SASS
    assert lower.coverage is Coverage.LOWER_SASS and lower.via == Arch(8, 0)
    assert coverage(sass, ptx, (7, 5)).coverage is Coverage.NONE  # never a higher minor/major
    assert coverage(sass, ptx, (10, 0)).coverage is Coverage.NONE  # no cross-major SASS


def test_ptx_jit_covers_newer_gpus_only() -> None:
    sass, ptx = split_arch_list(["8.0", "9.0"], ptx_newest=True)
    assert ptx == [Arch(9, 0)]
    result = coverage(sass, ptx, (12, 0))
    assert result.coverage is Coverage.PTX_JIT and result.via == Arch(9, 0)
    assert coverage(sass, ptx, (7, 5)).coverage is Coverage.NONE


def test_arch_specific_code_runs_only_on_that_chip() -> None:
    sass, ptx = split_arch_list(["9.0a"], ptx_newest=True)
    assert coverage(sass, ptx, (9, 0)).coverage is Coverage.EXACT_SASS
    assert coverage(sass, ptx, (10, 0)).coverage is Coverage.NONE


def test_family_code_runs_on_later_chips_of_the_family() -> None:
    sass, ptx = split_arch_list(["10.0f"], ptx_newest=False)
    assert coverage(sass, ptx, (10, 3)).coverage is Coverage.LOWER_SASS
    assert coverage(sass, ptx, (12, 0)).coverage is Coverage.NONE


def test_torch_cuda_arch_list_string() -> None:
    assert torch_cuda_arch_list(["7.5", "8.0", "9.0"], True) == "7.5;8.0;9.0+PTX"
    assert torch_cuda_arch_list(["8.6+PTX", "9.0"], False) == "8.6+PTX;9.0"


def test_uncovered_target_is_an_error_naming_the_fix(tmp_path: Path) -> None:
    text = gpu_stack(targets='["T4"]')
    message = one_error(tmp_path, text, "gpu.arch_list")
    assert "target 'T4': sm_75 has neither compatible SASS nor PTX" in message
    assert "add '7.5' to gpu.arch_list" in message


def test_lower_sass_and_ptx_coverage_are_notes(tmp_path: Path) -> None:
    stack = load_text(
        tmp_path,
        gpu_stack(cuda="12.8.1", torch="2.7.0", ptx=True, targets='["L4", "RTX 5090", "H100"]'),
    )
    notes = "\n".join(stack.notes)
    assert "target 'L4': sm_89 runs SASS built for 8.0" in notes
    assert "target 'RTX 5090': sm_120 has no SASS and would JIT-compile PTX for 9.0" in notes
    assert "H100" not in notes  # exact SASS needs no note


def test_unknown_gpu_name(tmp_path: Path) -> None:
    message = one_error(tmp_path, gpu_stack(targets='["H1OO"]'), "gpu.targets")
    assert "unknown GPU 'H1OO'" in message and "'sm_89'" in message


def test_bad_arch_entry(tmp_path: Path) -> None:
    message = one_error(tmp_path, gpu_stack(archs='["8.0", "ampere"]'), "gpu.arch_list")
    assert "'ampere' is not an architecture" in message


@pytest.mark.parametrize(
    ("cuda", "torch", "arch", "fragment"),
    [
        ("12.4.1", "2.6.0", "10.0", "CUDA 12.4.1 cannot compile arch 10.0; use CUDA >= 12.8"),
        ("12.6.3", "2.6.0", "12.0", "CUDA 12.6.3 cannot compile arch 12.0; use CUDA >= 12.8"),
        ("13.0.0", "2.9.0", "7.0", "CUDA 13.0.0 cannot compile arch 7.0; drop it"),
        ("12.8.1", "2.7.0", "3.7", "CUDA 12.8.1 cannot compile arch 3.7; drop it"),
    ],
)
def test_archs_the_cuda_version_cannot_compile(
    tmp_path: Path, cuda: str, torch: str, arch: str, fragment: str
) -> None:
    text = gpu_stack(cuda=cuda, torch=torch, archs=f'["8.0", "{arch}"]')
    assert fragment in one_error(tmp_path, text, "gpu.arch_list")


def test_blackwell_archs_compile_with_cuda_12_8(tmp_path: Path) -> None:
    stack = load_text(
        tmp_path,
        gpu_stack(
            cuda="12.8.1",
            torch="2.7.0",
            archs='["9.0", "10.0", "12.0"]',
            targets='["B200", "RTX 5090", "H200"]',
        ),
    )
    assert stack.variants[0].gpu.torch_cuda_arch_list == "9.0;10.0;12.0"


@pytest.mark.parametrize(
    ("torch", "cuda"), [("2.6.0", "13.0.0"), ("2.0.1", "12.1.0"), ("2.8.0", "11.8.0")]
)
def test_cuda_version_the_torch_release_does_not_support(
    tmp_path: Path, torch: str, cuda: str
) -> None:
    text = gpu_stack(cuda=cuda, torch=torch, archs='["8.0"]')
    message = one_error(tmp_path, text, "versions.cuda")
    assert f"torch {torch} does not support CUDA {cuda}" in message


def test_unofficial_minor_pairing_is_a_note(tmp_path: Path) -> None:
    stack = load_text(tmp_path, gpu_stack(cuda="12.6.3", torch="2.5.0", archs='["8.0"]'))
    assert any("torch 2.5.0 has no official CUDA 12.6 build" in n for n in stack.notes)


def test_torchvision_that_does_not_belong_names_the_right_partner(tmp_path: Path) -> None:
    text = gpu_stack().replace(
        'torch = "2.6.0"', 'torch = "2.6.0"\ntorchvision = "0.20.1"\ntorchaudio = "2.6"'
    )
    errors = config_errors(tmp_path, text)
    assert errors == [
        "versions.torchvision: torchvision 0.20.1 does not go with torch 2.6.0: "
        "its wheels require torch==2.5.1; use 0.21.0 (the release made with it: "
        "its wheels require torch==2.6.0)"
    ]


def test_torchaudio_that_does_not_belong(tmp_path: Path) -> None:
    text = gpu_stack().replace('torch = "2.6.0"', 'torch = "2.6.0"\ntorchaudio = "2.5.1"')
    assert "use 2.6.0" in one_error(tmp_path, text, "versions.torchaudio")


def test_partner_with_local_version_suffix_matches(tmp_path: Path) -> None:
    text = gpu_stack().replace(
        'torch = "2.6.0"', 'torch = "2.6.0+cu124"\ntorchvision = "0.21.0+cu124"'
    )
    load_text(tmp_path, text)


def test_a_torch_release_newer_than_the_release_matrix_is_a_note_with_its_pypi_cuda(
    tmp_path: Path,
) -> None:
    stack = load_text(tmp_path, gpu_stack(cuda="13.2.1", torch="2.15.0", archs='["8.0"]'))
    assert any(
        "torch 2.15.0 is not in the release matrix (gpu/tables.py TORCH_CUDA) (its "
        "PyPI wheel is built for CUDA 13.2); CUDA pairing not checked" in n
        for n in stack.notes
    ), stack.notes


def test_the_release_matrix_reaches_torch_2_14(tmp_path: Path) -> None:
    stack = load_text(tmp_path, gpu_stack(cuda="12.8.1", torch="2.14.0", archs='["8.0"]'))
    assert any("torch 2.14.0 has no official CUDA 12.8 build" in n for n in stack.notes)
    message = one_error(
        tmp_path, gpu_stack(cuda="11.8.0", torch="2.12.0", archs='["8.0"]'), "versions.cuda"
    )
    assert "torch 2.12.0 does not support CUDA 11.8.0 (it supports 12.6, 13.0, 13.2)" in message
