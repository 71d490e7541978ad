"""The fatbin reader against libraries made here with nvcc: exactly the requested archs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from build_graph.verify.in_image.fatbin import (
    Corrupt,
    FatbinError,
    NotAnElf,
    Truncated,
    fatbin_sections,
    parse_fatbin,
    scan_library,
)

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
    subprocess.run(
        [NVCC, *flags, *args, "-o", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


pytestmark = pytest.mark.skipif(not Path(NVCC).exists(), reason="needs nvcc (CUDA toolkit)")


@pytest.mark.parametrize(
    ("gencodes", "sass", "ptx"),
    [
        (["arch=compute_75,code=sm_75"], {"7.5"}, set()),
        (
            [
                "arch=compute_80,code=sm_80",
                "arch=compute_90,code=sm_90",
                "arch=compute_90,code=compute_90",
            ],
            {"8.0", "9.0"},
            {"9.0"},
        ),
        (
            [
                "arch=compute_75,code=sm_75",
                "arch=compute_86,code=sm_86",
                "arch=compute_89,code=sm_89",
                "arch=compute_120,code=sm_120",
            ],
            {"7.5", "8.6", "8.9", "12.0"},
            set(),
        ),
        (
            [
                "arch=compute_90a,code=sm_90a",
                "arch=compute_100,code=sm_100",
                "arch=compute_103f,code=sm_103f",
                "arch=compute_80,code=compute_80",
            ],
            {"9.0a", "10.0", "10.3f"},
            {"8.0"},
        ),
        (["arch=compute_86,code=compute_86"], set(), {"8.6"}),
    ],
    ids=["sm75-only", "ampere-hopper+ptx", "four-sass", "variants", "ptx-only"],
)
def test_reader_finds_exactly_the_requested_archs(
    tmp_path: Path, gencodes: list[str], sass: set[str], ptx: set[str]
) -> None:
    library = scan_library(nvcc(tmp_path, gencodes))
    assert library.sass == sass
    assert library.ptx == ptx
    assert library.containers >= 1


def test_bare_fatbin_file(tmp_path: Path) -> None:
    found = scan_library(
        nvcc(
            tmp_path,
            ["arch=compute_80,code=sm_80", "arch=compute_80,code=compute_80"],
            shared=False,
        )
    )
    assert (found.sass, found.ptx, found.containers) == ({"8.0"}, {"8.0"}, 1)


def test_library_without_device_code(tmp_path: Path) -> None:
    found = scan_library(Path("/bin/ls").resolve())
    assert (found.sass, found.ptx, found.containers) == (set(), set(), 0)


def test_section_table_and_garbage(tmp_path: Path) -> None:
    library = nvcc(tmp_path, ["arch=compute_75,code=sm_75"])
    data = library.read_bytes()
    [(offset, size)] = fatbin_sections(data)
    assert size > 0 and data[offset : offset + 4] == bytes.fromhex("50ed55ba")
    with pytest.raises(NotAnElf):
        fatbin_sections(b"not an elf file at all" * 10)
    assert parse_fatbin(b"\0" * 4096).sass == set()  # no magic: nothing found, no crash


TWO_ARCHS = ["arch=compute_75,code=sm_75", "arch=compute_90,code=sm_90"]


def _cut(library: Path, size: int) -> Path:
    out = library.with_name(f"cut-{size}.so")
    out.write_bytes(library.read_bytes()[:size])
    return out


@pytest.mark.parametrize("where", ["inside the fatbin", "before the section headers"])
def test_truncated_library_is_a_named_error(tmp_path: Path, where: str) -> None:
    library = nvcc(tmp_path, TWO_ARCHS)
    [(offset, size)] = fatbin_sections(library.read_bytes())
    keep = offset + size // 2 if where == "inside the fatbin" else library.stat().st_size - 100
    with pytest.raises(Truncated) as caught:
        scan_library(_cut(library, keep))
    assert "past the file" in str(caught.value) or "cut off" in str(caught.value)


def test_empty_and_foreign_files_are_named_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.so"
    empty.write_bytes(b"")
    with pytest.raises(Truncated, match="empty"):
        scan_library(empty)
    text = tmp_path / "libtext.so"
    text.write_text("INPUT(-lfoo)\n")  # a linker script named like a library
    with pytest.raises(NotAnElf):
        scan_library(text)
    with pytest.raises(FatbinError, match="cannot read"):
        scan_library(tmp_path / "missing.so")


def test_corrupt_fatbin_entry_is_a_named_error(tmp_path: Path) -> None:
    library = nvcc(tmp_path, TWO_ARCHS)
    data = bytearray(library.read_bytes())
    [(offset, _)] = fatbin_sections(bytes(data))
    header_size = int.from_bytes(data[offset + 6 : offset + 8], "little")
    entry = offset + header_size
    data[entry + 4 : entry + 8] = (7).to_bytes(4, "little")  # an entry header of 7 bytes
    broken = tmp_path / "broken.so"
    broken.write_bytes(bytes(data))
    with pytest.raises(Corrupt, match="does not fit"):
        scan_library(broken)


def test_garbage_anywhere_raises_only_reader_errors(tmp_path: Path) -> None:
    """Bytes flipped at many places: the reader answers or raises its own error, never
    struct.error or IndexError (one bad file must never stop the probe)."""
    library = nvcc(tmp_path, TWO_ARCHS).read_bytes()
    target = tmp_path / "flipped.so"
    outcomes = {"read": 0, "named error": 0}
    for position in range(0, len(library), max(1, len(library) // 400)):
        data = bytearray(library)
        data[position : position + 8] = b"\xff" * 8
        target.write_bytes(bytes(data[: len(library)]))
        try:
            scan_library(target)
            outcomes["read"] += 1
        except FatbinError:
            outcomes["named error"] += 1
    assert outcomes["read"] > 0 and outcomes["named error"] > 0, outcomes
