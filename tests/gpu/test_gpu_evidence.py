"""GPU evidence: run on a machine with an NVIDIA GPU (`pytest -m gpu`), never in CI.

What ran and what it printed is recorded in docs/gpu-evidence.md.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from build_graph.gpu.archs import Coverage, coverage, parse_arch
from build_graph.verify.in_image.fatbin import FatbinError, Truncated, scan_library

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parent.parent.parent

LAUNCHER = r"""
#include <cuda_runtime.h>
extern "C" __global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
extern "C" int launch_add_one(void) {
  float* d = nullptr;
  float h[1024];
  if (cudaMalloc(&d, sizeof h) != cudaSuccess) return -1;
  cudaMemset(d, 0, sizeof h);
  add_one<<<4, 256>>>(d, 1024);
  int err = (int)cudaGetLastError();
  if (err == 0) err = (int)cudaDeviceSynchronize();
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  cudaFree(d);
  if (err == 0 && h[1023] != 1.0f) return -2;
  return err;
}
"""
NO_KERNEL_IMAGE = 209  # cudaErrorNoKernelImageForDevice


def device_capability() -> tuple[int, int]:
    import torch

    assert torch.cuda.is_available(), "this test needs a GPU"
    major, minor = torch.cuda.get_device_capability(0)
    return int(major), int(minor)


def libtorch_cuda() -> Path:
    import torch

    return Path(torch.__file__).parent / "lib" / "libtorch_cuda.so"


def cuobjdump_archs(library: Path, flag: str, suffix: str) -> set[str]:
    out = subprocess.run(
        ["cuobjdump", flag, str(library)], capture_output=True, text=True, check=True, timeout=1200
    ).stdout
    found = set()
    for number, variant in re.findall(rf"\.sm_(\d+)([af]?)\.{suffix}", out):
        found.add(f"{int(number) // 10}.{int(number) % 10}{variant}")
    return found


def test_reader_matches_cuobjdump_on_libtorch_cuda() -> None:
    library = libtorch_cuda()
    ours = scan_library(library)
    elf = cuobjdump_archs(library, "--list-elf", "cubin")
    ptx = cuobjdump_archs(library, "--list-ptx", "ptx")
    print(f"\n{library} ({library.stat().st_size / 2**20:.0f} MiB)")
    print(
        f"  ours:      SASS {sorted(ours.sass)}  PTX {sorted(ours.ptx)}  "
        f"containers {ours.containers}"
    )
    print(f"  cuobjdump: SASS {sorted(elf)}  PTX {sorted(ptx)}")
    assert ours.sass == elf
    assert ours.ptx == ptx


def cuda_libraries() -> list[Path]:
    """Every shared library of torch and of the nvidia-* wheels in this environment."""
    import torch

    site = Path(torch.__file__).parent.parent
    found = [*(site / "torch" / "lib").glob("*.so*"), *(site / "nvidia").glob("**/lib/*.so*")]
    return sorted(p for p in found if p.is_file() and not p.is_symlink())


def test_the_strict_reader_reads_every_real_cuda_library() -> None:
    """The reader raises on truncated or corrupt files; it must never do so on real ones."""
    libraries = cuda_libraries()
    errors, with_code, total = [], 0, 0
    for library in libraries:
        total += library.stat().st_size
        try:
            found = scan_library(library)
        except FatbinError as exc:
            errors.append(f"{library.name}: {exc}")
            continue
        if found.sass or found.ptx:
            with_code += 1
            print(
                f"  {library.name}: SASS {sorted(found.sass)} PTX {sorted(found.ptx)} "
                f"({found.containers} containers)"
            )
    print(
        f"{len(libraries)} libraries ({total / 2**30:.1f} GiB), {with_code} with device code, "
        f"{len(errors)} unreadable"
    )
    assert len(libraries) > 10 and with_code > 5
    assert errors == []


def test_a_truncated_real_library_is_a_named_error(tmp_path: Path) -> None:
    library = libtorch_cuda().with_name("libtorch_cuda_linalg.so")
    cut = tmp_path / library.name
    with library.open("rb") as source:
        cut.write_bytes(source.read(library.stat().st_size // 2))
    try:
        scan_library(cut)
    except Truncated as exc:
        print(f"\n{cut.name} cut to half: {type(exc).__name__}: {exc}")
    else:
        raise AssertionError("a library cut in half was read as if whole")


def build_launcher(folder: Path, gencodes: list[str]) -> Path:
    source = folder / "launcher.cu"
    source.write_text(LAUNCHER)
    out = folder / "liblauncher.so"
    args = [a for g in gencodes for a in ("-gencode", g)]
    subprocess.run(
        ["nvcc", "-shared", "-Xcompiler", "-fPIC", *args, "-o", str(out), str(source)],
        check=True,
        timeout=600,
    )
    return out


def launch(library: Path) -> int:
    """Launch the kernel in a fresh process (a failed context must not leak into others)."""
    code = f"import ctypes; lib = ctypes.CDLL({str(library)!r}); print(lib.launch_add_one())"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    return int(out.stdout.strip())


def test_sm75_only_library_is_flagged_and_really_fails_to_launch(tmp_path: Path) -> None:
    cc = device_capability()
    (tmp_path / "old").mkdir()
    (tmp_path / "own").mkdir()
    old = build_launcher(tmp_path / "old", ["arch=compute_75,code=sm_75"])
    own = build_launcher(tmp_path / "own", [f"arch=compute_{cc[0]}{cc[1]},code=sm_{cc[0]}{cc[1]}"])
    for name, library in (("sm_75 only", old), (f"own sm_{cc[0]}{cc[1]}", own)):
        found = scan_library(library)
        verdict = coverage(
            [parse_arch(a)[0] for a in found.sass], [parse_arch(a)[0] for a in found.ptx], cc
        )
        code = launch(library)
        print(
            f"\n{name}: SASS {sorted(found.sass)} PTX {sorted(found.ptx)} -> "
            f"{verdict.describe(cc)}; launch returned {code}"
        )
        if library == old:
            assert verdict.coverage is Coverage.NONE
            assert code == NO_KERNEL_IMAGE
        else:
            assert verdict.coverage is Coverage.EXACT_SASS
            assert code == 0


def test_doctor_on_this_gpu_machine(tmp_path: Path) -> None:
    import torch

    cc = device_capability()
    archs = sorted(
        {a.split("_")[1] for a in torch.cuda.get_arch_list() if a.startswith("sm_")}, key=int
    )
    arch_list = [f"{int(a) // 10}.{int(a) % 10}" for a in archs]
    cuda = torch.version.cuda
    manifest = tmp_path / "images.toml"
    manifest.write_text(
        textwrap.dedent(f"""\
        # The environment of this GPU machine, written as a pinned stack.
        [stack]
        name = "gpu-host"
        registry = "127.0.0.1:5000/gpu-host"
        [versions]
        python = "{sys.version_info.major}.{sys.version_info.minor}"
        cuda = "{cuda}"
        torch = "{torch.__version__.split("+")[0]}"
        [gpu]
        arch_list = {json.dumps(arch_list)}
        targets = ["sm_{cc[0]}{cc[1]}"]
        [tiers.host]
        from = "debian:bookworm-slim"
        template = "python-runtime.Dockerfile.j2"
        verify = {{ single_python = false, pip_check = false }}
        """)
    )
    report = tmp_path / "doctor.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "build_graph",
            "doctor",
            "--manifest",
            str(manifest),
            "--tier",
            "host",
            "--emit-json",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=REPO,
        check=False,
    )
    print("\n" + result.stdout + result.stderr)
    assert result.returncode == 0
    checks = {c["name"]: c for c in json.loads(report.read_text())["checks"]}
    assert checks["GPU kernel launch"]["status"] == "pass"
    assert checks[f"runs on sm_{cc[0]}{cc[1]}"]["status"] == "pass"
    assert checks["torch CUDA"]["status"] == "pass"
    assert checks["archs in libtorch_cuda.so"]["status"] == "pass"
    assert "GPU code path" not in checks  # information lines, not checks
    assert "GPU passed" in result.stdout and "info libtorch_cuda.so: sm_90" in result.stdout
