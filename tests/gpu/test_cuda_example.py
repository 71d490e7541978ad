"""GPU evidence for the CUDA example (examples/cuda): the kernels the graph compiled run.

Run on the device machine, never in CI: `pytest -m gpu tests/gpu/test_cuda_example.py`
with BUILD_GRAPH_CUDA_WHEELS naming the folder of the wheels the compile stage produced
(default: examples/cuda/build/default/kernels/wheels, as `doit` leaves them). The wheels
are unpacked as they are, never rebuilt: teamkernels is a stable-ABI (abi3) extension
registered through TORCH_LIBRARY and torch-scatter's libraries are loaded by
torch.ops.load_library, so the very bytes built in the image for Debian's Python 3.11 load
in the device's Python 3.12 with the same torch 2.11.0+cu130. What ran and what it printed:
docs/gpu-evidence.md.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parent.parent.parent
WHEELS = Path(
    os.environ.get("BUILD_GRAPH_CUDA_WHEELS", REPO / "examples/cuda/build/default/kernels/wheels")
)


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    wheels = sorted(WHEELS.glob("*.whl"))
    assert {w.name.split("-")[0] for w in wheels} >= {"teamkernels", "torch_scatter"}, wheels
    site = tmp_path_factory.mktemp("site")
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
    sys.path.insert(0, str(site))
    yield site
    sys.path.remove(str(site))


def torch_module() -> Any:
    import torch

    assert torch.cuda.is_available(), "this test needs a GPU"
    return torch


def test_teamkernels_run_their_own_sass_with_right_results(unpacked: Path) -> None:
    torch = torch_module()
    import teamkernels  # type: ignore[import-not-found]

    major, minor = torch.cuda.get_device_capability(0)
    ran = teamkernels.arch()
    print(f"teamkernels.arch() on {torch.cuda.get_device_name(0)}: {ran}")
    assert ran == major * 100 + minor * 10  # the GPU's own SASS ran, not JIT-compiled PTX

    x = torch.randn(1_000_003, device="cuda")
    y = torch.randn_like(x)
    # nvcc contracts a * x + y into one fused multiply-add (one rounding), torch rounds
    # twice: equal to within an ulp, not bit for bit.
    torch.testing.assert_close(teamkernels.saxpy(2.5, x, y), 2.5 * x + y, rtol=1.2e-7, atol=1e-6)
    m = torch.randn(513, 4099, device="cuda")
    torch.testing.assert_close(teamkernels.row_sum(m), m.sum(dim=1), rtol=1e-4, atol=1e-3)


def test_torch_scatter_built_from_its_sdist_gives_torchs_answers(unpacked: Path) -> None:
    torch = torch_module()
    import torch_scatter  # type: ignore[import-not-found]

    print(f"torch_scatter {torch_scatter.__version__} from {torch_scatter.__file__}")
    src = torch.randn(100_000, 16, device="cuda")
    index = torch.randint(0, 1000, (100_000,), device="cuda")
    for reduce in ("sum", "mean", "max", "min"):
        out = torch_scatter.scatter(src, index, dim=0, dim_size=1000, reduce=reduce)
        want = torch.zeros(1000, 16, device="cuda").scatter_reduce(
            0,
            index[:, None].expand_as(src),
            src,
            reduce={"max": "amax", "min": "amin"}.get(reduce, reduce),
            include_self=False,
        )
        torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)
    ptr = torch.tensor([0, 3, 3, 10], device="cuda")
    values = torch.arange(10.0, device="cuda")
    assert torch_scatter.segment_csr(values, ptr, reduce="sum").tolist() == [3.0, 0.0, 42.0]


def test_the_same_source_without_this_gpus_arch_fails_to_launch(
    unpacked: Path, tmp_path: Path
) -> None:
    """The negative control: teamkernels built here for sm_75 only (no PTX) loads, but its
    kernels cannot run on this GPU: the error is CUDA's 'no kernel image'."""
    torch_module()
    source = tmp_path / "teamkernels"
    shutil.copytree(REPO / "examples/cuda/src/teamkernels", source)
    env = {**os.environ, "TORCH_CUDA_ARCH_LIST": "7.5", "MAX_JOBS": "4"}
    built = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    probe = (
        "import torch, teamkernels; print(teamkernels.__file__); "
        "x = torch.ones(8, device='cuda'); teamkernels.saxpy(1.0, x, x); "
        "torch.cuda.synchronize()"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe], cwd=source, capture_output=True, text=True, check=False
    )
    print(ran.stdout, ran.stderr[-1500:])
    assert ran.returncode != 0
    assert str(source) in ran.stdout  # the sm_75-only build, not the unpacked wheel
    assert "no kernel image is available for execution on the device" in ran.stderr
