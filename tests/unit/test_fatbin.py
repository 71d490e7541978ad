"""The fatbin reader against libraries made here with nvcc: exactly the requested archs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from build_graph.verify.fatbin import NotAnElf, fatbin_sections, parse_fatbin, scan_library

KERNEL = """
extern "C" __global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
"""
NVCC = shutil.which("nvcc") or "/usr/local/bin/nvcc"


def nvcc(tmp_path: Path, gencodes: list[str], shared: bool = True) -> Path:
    source = tmp_path / "k.cu"
    source.write_text(KERNEL)
    out = tmp_path / ("libk.so" if shared else "k.fatbin")
    flags = ["-shared", "-Xcompiler", "-fPIC"] if shared else ["-fatbin"]
    args = [a for g in gencodes for a in ("-gencode", g)]
    subprocess.run([NVCC, *flags, *args, "-o", str(out), str(source)], check=True,
                   capture_output=True, timeout=300)
    return out


pytestmark = pytest.mark.skipif(not Path(NVCC).exists(), reason="needs nvcc (CUDA toolkit)")


@pytest.mark.parametrize(
    ("gencodes", "sass", "ptx"),
    [
        (["arch=compute_75,code=sm_75"], {"7.5"}, set()),
        (["arch=compute_80,code=sm_80", "arch=compute_90,code=sm_90",
          "arch=compute_90,code=compute_90"], {"8.0", "9.0"}, {"9.0"}),
        (["arch=compute_75,code=sm_75", "arch=compute_86,code=sm_86",
          "arch=compute_89,code=sm_89", "arch=compute_120,code=sm_120"],
         {"7.5", "8.6", "8.9", "12.0"}, set()),
        (["arch=compute_90a,code=sm_90a", "arch=compute_100,code=sm_100",
          "arch=compute_103f,code=sm_103f", "arch=compute_80,code=compute_80"],
         {"9.0a", "10.0", "10.3f"}, {"8.0"}),
        (["arch=compute_86,code=compute_86"], set(), {"8.6"}),
    ],
    ids=["sm75-only", "ampere-hopper+ptx", "four-sass", "variants", "ptx-only"],
)
def test_reader_finds_exactly_the_requested_archs(
        tmp_path: Path, gencodes: list[str], sass: set[str], ptx: set[str]) -> None:
    library = scan_library(nvcc(tmp_path, gencodes))
    assert library.sass == sass
    assert library.ptx == ptx
    assert library.containers >= 1


def test_bare_fatbin_file(tmp_path: Path) -> None:
    found = scan_library(nvcc(tmp_path, ["arch=compute_80,code=sm_80",
                                         "arch=compute_80,code=compute_80"], shared=False))
    assert (found.sass, found.ptx, found.containers) == ({"8.0"}, {"8.0"}, 1)


def test_library_without_device_code(tmp_path: Path) -> None:
    found = scan_library(Path("/bin/ls").resolve())
    assert (found.sass, found.ptx, found.containers) == (set(), set(), 0)


def test_section_table_and_garbage(tmp_path: Path) -> None:
    library = nvcc(tmp_path, ["arch=compute_75,code=sm_75"])
    data = library.read_bytes()
    [(offset, size)] = fatbin_sections(data)
    assert size > 0 and data[offset:offset + 4] == bytes.fromhex("50ed55ba")
    with pytest.raises(NotAnElf):
        fatbin_sections(b"not an elf file at all" * 10)
    assert parse_fatbin(b"\0" * 4096).sass == set()  # no magic: nothing found, no crash
