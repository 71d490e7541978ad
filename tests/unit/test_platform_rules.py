"""Which archs and CUDA lines a linux/arm64 image can use (gpu/platform_rules.py)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from build_graph.gpu.archs import split_arch_list
from build_graph.gpu.platform_rules import (
    ARM_GPU_HOSTS,
    PYTORCH_AARCH64_ARCH_LIST,
    ArmHost,
    Stack,
    arm64_uncovered,
    arm64_warnings,
    carried_archs,
    cuda_line,
    image_hosts,
    pypi_aarch64_cuda,
    pypi_wheel_warning,
)
from build_graph.gpu.tables import GPU_COMPUTE_CAPABILITY

REPO = Path(__file__).resolve().parents[2]


def cu130() -> tuple[list[str], list[str], str]:
    """The cu130 variant of the repo's images.toml: (SASS archs, PTX archs, CUDA)."""
    manifest = tomllib.loads((REPO / "images.toml").read_text())
    variant = manifest["variants"]["cu130"]
    sass, ptx = split_arch_list(variant["gpu"]["arch_list"], manifest["gpu"]["ptx"])
    return [str(a) for a in sass], [str(a) for a in ptx], variant["versions"]["cuda"]


def test_cu130_of_images_toml_is_what_this_test_assumes() -> None:
    assert cu130() == (["7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0"], ["12.0"], "13.0.2")


def test_cu130_warns_about_the_ampere_and_ada_workstation_archs_only() -> None:
    sass, ptx, cuda = cu130()
    warnings = arm64_warnings(sass, ptx, cuda)
    assert [w.split(":")[0] for w in warnings] == ["8.6", "8.9"]
    eight_nine = warnings[1]
    assert eight_nine.startswith(
        "8.9: no Arm GPU host runs a linux/arm64 image of CUDA 13.0 with it ("
    )
    assert "IGX Orin dGPU mode (RTX 6000 Ada) carries it only before CUDA 13.0" in eight_nine
    assert (
        "table for CUDA 13.0: 7.5 AWS EC2 G5g (T4G), 8.0 Ampere Altra Arm HPC DevKit "
        "(A100), 9.0 GH200 Grace Hopper (H100), 10.0 GB200 Grace Blackwell (B200), 10.3 "
        "GB300 Grace Blackwell Ultra (B300), 11.0 Jetson Thor (Thor iGPU), 12.1 DGX "
        "Spark (GB10)"
    ) in eight_nine
    assert eight_nine.endswith(
        "it only costs compile time in the linux/arm64 image; drop "
        "it from gpu.arch_list, or build linux/arm64 in a variant of "
        "its own with its own arch list"
    )
    # 8.6 SASS would also run on Jetson Orin (8.7), which takes only Jetson builds
    assert "Jetson Orin (Orin iGPU) runs only Jetson (L4T) CUDA builds" in warnings[0]
    assert warnings[0].endswith("(a Jetson image needs an L4T base of its own)")


def test_cu130_leaves_jetson_thor_without_code() -> None:
    sass, ptx, cuda = cu130()
    assert arm64_uncovered(sass, ptx, cuda) == [
        "Jetson Thor (Thor iGPU, 11.0) runs linux/arm64 CUDA images of CUDA 13.0 but can run "
        "none of this build: add '11.0' to gpu.arch_list (of a variant for linux/arm64), or "
        "leave that host out"
    ]
    assert arm64_uncovered([*sass, "11.0"], ptx, cuda) == []


def test_same_list_on_cuda_12_8_has_nothing_to_drop() -> None:
    # IGX Orin's documented dGPU stack is CUDA 12: its RTX A6000 and RTX 6000 Ada count
    sass, ptx, _ = cu130()
    assert arm64_warnings(sass, ptx, "12.8.1") == []
    assert carried_archs("12.8.1") == ["7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "10.3", "12.1"]


def test_grace_only_list_gives_no_warning() -> None:
    assert arm64_warnings(["9.0", "10.0"], [], "13.0.2") == []
    assert arm64_warnings(["9.0", "10.0"], ["10.0"], "13.0.2") == []
    assert arm64_warnings(["9.0", "10.0"], [], None) == []


def test_pytorchs_own_aarch64_cuda_13_list_wastes_nothing_but_skips_the_t4g() -> None:
    sass, ptx = split_arch_list(PYTORCH_AARCH64_ARCH_LIST[(13, 0)].split(";"), False)
    names = [str(a) for a in sass], [str(a) for a in ptx]
    assert names == (["8.0", "9.0", "10.0", "11.0", "12.0"], ["12.0"])
    assert arm64_warnings(*names, "13.0") == []
    [uncovered] = arm64_uncovered(*names, "13.0")
    assert uncovered.startswith(
        "AWS EC2 G5g (T4G, 7.5) runs linux/arm64 CUDA images of "
        "CUDA 13.0 but can run none of this build: add '7.5'"
    )


def test_orin_arch_in_a_cuda_13_image_names_the_jetson_split() -> None:
    [warning] = arm64_warnings(["8.7", "9.0"], [], "13.0")
    assert warning.startswith("8.7: no Arm GPU host runs a linux/arm64 image of CUDA 13.0")
    assert "Jetson Orin (Orin iGPU) runs only Jetson (L4T) CUDA builds, not arm64-sbsa" in warning
    assert warning.endswith("(a Jetson image needs an L4T base of its own)")


def test_arch_no_host_has_at_all() -> None:
    only_grace = [h for h in ARM_GPU_HOSTS if h.name.startswith(("GH200", "GB200"))]
    [warning] = arm64_warnings(["8.9", "9.0"], [], "13.0", hosts=only_grace)
    assert warning == (
        "8.9: no Arm GPU host carries it (table: 9.0 GH200 Grace Hopper "
        "(H100), 10.0 GB200 Grace Blackwell (B200)); it only costs compile "
        "time in the linux/arm64 image; drop it from gpu.arch_list, or "
        "build linux/arm64 in a variant of its own with its own arch list"
    )


def test_ptx_newer_than_every_host() -> None:
    only_grace = [h for h in ARM_GPU_HOSTS if h.name.startswith("GH200")]
    [warning] = arm64_warnings(["9.0"], ["10.0"], "13.0", hosts=only_grace)
    assert warning.startswith(
        "10.0+PTX: no Arm GPU host that runs a linux/arm64 image of "
        "CUDA 13.0 has compute capability 10.0 or above"
    )
    assert arm64_warnings(["9.0"], ["9.0"], "13.0", hosts=only_grace) == []


def test_binary_compatibility_counts() -> None:
    # 12.0 SASS runs on DGX Spark (12.1), 10.0 on GB300 (10.3); 10.0a only on 10.0 exactly
    gb300 = [h for h in ARM_GPU_HOSTS if h.cc == (10, 3)]
    assert arm64_warnings(["10.0"], [], "13.0", hosts=gb300) == []
    assert [w.split(":")[0] for w in arm64_warnings(["10.0a"], [], "13.0", hosts=gb300)] == [
        "10.0a"
    ]
    spark = [h for h in ARM_GPU_HOSTS if h.name == "DGX Spark"]
    assert arm64_warnings(["12.0", "sm_120"], [], "13.0", hosts=spark) == []


def test_unparsable_entries_are_left_to_check_arch_list() -> None:
    assert arm64_warnings(["nine", "9.0"], ["x"], "13.0") == []


@pytest.mark.parametrize(
    ("cuda", "thor"), [("12.8.1", None), ("12.9", None), ("13.0.2", (11, 0)), ("13.2", (11, 0))]
)
def test_thor_runs_sbsa_images_from_cuda_13_only(cuda: str, thor: tuple[int, int] | None) -> None:
    found = [h.cc for h in image_hosts(cuda) if h.name == "Jetson Thor"]
    assert found == ([thor] if thor else [])


def test_orin_never_runs_an_arm64_image() -> None:
    orin = [h for h in ARM_GPU_HOSTS if h.cc == (8, 7)]
    assert [h.stack for h in orin] == [Stack.JETSON]
    for cuda in ("12.6", "13.0", None):
        assert all(h.cc != (8, 7) for h in image_hosts(cuda))


def test_rows_agree_with_the_gpu_table() -> None:
    # the shared rows of tables.GPU_COMPUTE_CAPABILITY (same source page)
    named = {
        "GH200": "GH200 Grace Hopper",
        "GB200": "GB200 Grace Blackwell",
        "GB300": "GB300 Grace Blackwell Ultra",
        "DGX Spark": "DGX Spark",
        "Jetson Orin": "Jetson Orin",
        "A100": "Ampere Altra Arm HPC DevKit",
        "RTX 6000 Ada": "IGX Orin dGPU mode",
    }
    for gpu, host in named.items():
        ccs = {h.cc for h in ARM_GPU_HOSTS if h.name == host}
        assert GPU_COMPUTE_CAPABILITY[gpu] in ccs, gpu


def test_row_ranges() -> None:
    row = ArmHost("x", "y", (9, 0), Stack.SBSA, cuda_from=(12, 0), cuda_before=(13, 0))
    assert [row.holds_for(c) for c in [(11, 8), (12, 0), (12, 9), (13, 0), None]] == [
        False,
        True,
        True,
        False,
        True,
    ]
    assert not ArmHost("x", "y", (8, 7), Stack.JETSON).runs_image(None)


def test_cuda_line() -> None:
    assert cuda_line("13.0.2") == (13, 0)
    assert cuda_line("12.8") == (12, 8)
    assert cuda_line(None) is None
    assert cuda_line("latest") is None


@pytest.mark.parametrize(
    ("torch", "cuda"),
    [
        ("2.10.0", None),
        ("2.11.0", (13, 0)),
        ("2.14.1", (13, 0)),
        ("2.15.0", (13, 2)),
        ("2.16.0", None),
    ],
)
def test_pypi_aarch64_cuda(torch: str, cuda: tuple[int, int] | None) -> None:
    assert pypi_aarch64_cuda(torch) == cuda


def test_pypi_wheel_warning() -> None:
    warning = pypi_wheel_warning("2.10.0")
    assert warning == (
        "torch 2.10.0: its linux/arm64 wheel on PyPI is CPU-only (its CUDA "
        "requirements are for x86_64 alone); PyPI has CUDA aarch64 wheels "
        "from torch 2.11 (CUDA 13.0): use torch >= 2.11 or build torch from "
        "source for the linux/arm64 image"
    )
    assert pypi_wheel_warning("2.6.0") is not None
    assert pypi_wheel_warning("2.11.0") is None
    assert pypi_wheel_warning("2.14.1") is None
    assert arm64_warnings(["9.0"], [], "12.4.1", torch="2.6.0") == [pypi_wheel_warning("2.6.0")]
    assert arm64_warnings(["9.0"], [], "13.0.2", torch="2.14.1") == []
