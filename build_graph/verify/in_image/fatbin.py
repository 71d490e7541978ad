"""List the SASS and PTX architectures in a CUDA shared library's fatbin, without cuobjdump.

Standard library only: this file is mounted into images next to probe.py and imported
there. It reads the ELF section headers, then walks the fatbin containers of the
`.nv_fatbin` section through mmap, touching only entry headers (libtorch_cuda.so's section
is hundreds of MB; its payloads are never read).

Layout (little-endian; described publicly, e.g. GrigoryEvko/nvopen-tools
fatbin/FORMAT_SPECIFICATION.md, and confirmed here against nvcc 13.0 output):
container header (16 bytes): u32 magic 0xBA55ED50, u16 version, u16 header size,
u64 size of the entries that follow. Entry: u16 kind (1 PTX, 2 ELF) @0, u32 entry-header
size @4, u64 payload size @8, u32 arch (e.g. 90) @28, u64 flags @40; the next entry starts
at entry + header size + payload size. Flags seen with nvcc 13.0: 0x100000 on
arch-specific ('sm_90a') code, 0x200000 on family ('sm_103f') code.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path

MAGIC = 0xBA55ED50
_MAGIC_BYTES = struct.pack("<I", MAGIC)
KIND_PTX = 1
KINDS_ELF = (2, 0x10)
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY = 0x200000
_ELF_MAGIC = b"\x7fELF"
_MAX_PADDING = 64
_SHT_NOBITS = 8  # a section that occupies no file bytes


class FatbinError(ValueError):
    """The file cannot be read as a CUDA library: the only kind of error this module raises."""


class NotAnElf(FatbinError):
    """Not a 64-bit little-endian ELF file (nor a bare fatbin)."""


class Truncated(FatbinError):
    """A header or section points past the end of the file."""


class Corrupt(FatbinError):
    """A fatbin container or entry header makes no sense."""


@dataclass
class FatbinContents:
    """Architectures as TORCH_CUDA_ARCH_LIST writes them: '8.0', '9.0a', '10.3f'."""

    sass: set[str] = field(default_factory=set)
    ptx: set[str] = field(default_factory=set)
    containers: int = 0

    def as_dict(self) -> dict[str, object]:
        return {
            "sass": sorted(self.sass, key=_order),
            "ptx": sorted(self.ptx, key=_order),
            "containers": self.containers,
        }


def _order(arch: str) -> tuple[int, int, str]:
    major, _, rest = arch.partition(".")
    return int(major), int(rest[:1] or 0), rest[1:]


def arch_name(number: int, flags: int) -> str:
    """90 + arch-specific flag -> '9.0a'; 120 -> '12.0'."""
    suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY else ""
    return f"{number // 10}.{number % 10}{suffix}"


def parse_fatbin(
    data: bytes | mmap.mmap,
    start: int = 0,
    end: int | None = None,
    into: FatbinContents | None = None,
) -> FatbinContents:
    """Walk every container between `start` and `end` (a .fatbin file or an ELF section)."""
    found = into if into is not None else FatbinContents()
    end = len(data) if end is None else end
    offset = data.find(_MAGIC_BYTES, start, end)
    while offset != -1:
        if offset + 16 > end:
            raise Truncated(f"fatbin container at {offset:#x} is cut off by the end of its data")
        _, _, header_size, size = struct.unpack_from("<IHHQ", data, offset)
        container_end = offset + header_size + size
        if header_size < 16:
            raise Corrupt(f"fatbin container at {offset:#x} has a {header_size}-byte header")
        if container_end > end:
            raise Truncated(
                f"fatbin container at {offset:#x} claims {size} bytes; only "
                f"{max(end - offset - header_size, 0)} are there"
            )
        _walk_entries(data, offset + header_size, container_end, found)
        found.containers += 1
        offset = data.find(_MAGIC_BYTES, max(container_end, offset + 16), end)
    return found


def _walk_entries(data: bytes | mmap.mmap, entry: int, end: int, found: FatbinContents) -> None:
    while entry < end:
        if _zero_padding(data, entry, end):
            return
        if entry + 48 > end:
            raise Truncated(f"fatbin entry at {entry:#x} is cut off by its container's end")
        kind, _, header_size, payload = struct.unpack_from("<HHIQ", data, entry)
        if header_size < 48 or entry + header_size + payload > end:
            raise Corrupt(
                f"fatbin entry at {entry:#x} (kind {kind}, header {header_size} "
                f"bytes, payload {payload}) does not fit its container"
            )
        (arch,) = struct.unpack_from("<I", data, entry + 28)
        (flags,) = struct.unpack_from("<Q", data, entry + 40)
        if kind == KIND_PTX:
            found.ptx.add(arch_name(arch, flags))
        elif kind in KINDS_ELF:
            found.sass.add(arch_name(arch, flags))
        else:
            raise Corrupt(f"fatbin entry at {entry:#x} has unknown kind {kind}")
        entry += header_size + payload


def _zero_padding(data: bytes | mmap.mmap, start: int, end: int) -> bool:
    """Whether the rest of a container is alignment padding (a few zero bytes)."""
    return end - start <= _MAX_PADDING and not bytes(data[start:end]).strip(b"\0")


def fatbin_sections(data: bytes | mmap.mmap) -> list[tuple[int, int]]:
    """(offset, size) of the ELF sections holding fatbins (.nv_fatbin)."""
    if len(data) < 64 or data[:4] != _ELF_MAGIC or data[4] != 2 or data[5] != 1:
        raise NotAnElf("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    entsize, count, names_index = struct.unpack_from("<HHH", data, 0x3A)
    if count and (entsize < 64 or shoff + count * entsize > len(data)):
        raise Truncated(
            f"ELF section headers ({count} x {entsize} bytes at {shoff:#x}) end "
            f"past the file's {len(data)} bytes"
        )
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * entsize) for i in range(count)]
    if not headers or names_index >= count:
        return []
    names_offset = headers[names_index][4]
    sections = []
    for name, kind, _, _, offset, size in headers:
        end = data.find(b"\0", names_offset + name)
        if end == -1 or bytes(data[names_offset + name : end]) != b".nv_fatbin":
            continue
        if kind != _SHT_NOBITS and offset + size > len(data):
            raise Truncated(
                f".nv_fatbin ({size} bytes at {offset:#x}) ends past the file's {len(data)} bytes"
            )
        sections.append((offset, size))
    return sections


def scan_library(path: Path) -> FatbinContents:
    """The architectures in one shared library (empty if it has no fatbin).

    Raises only FatbinError (and its kinds), whatever the file holds: an unreadable file,
    an empty one, not ELF, truncated or corrupt.
    """
    try:
        with path.open("rb") as handle:
            if path.stat().st_size == 0:
                raise Truncated("the file is empty")
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return _scan(data)
    except FatbinError:
        raise
    except OSError as exc:
        raise FatbinError(f"cannot read it: {exc.strerror or exc}") from None
    except (struct.error, IndexError, ValueError, OverflowError) as exc:
        raise Corrupt(f"unreadable headers: {exc}") from None


def _scan(data: mmap.mmap) -> FatbinContents:
    found = FatbinContents()
    if data[:4] != _ELF_MAGIC:
        if data.find(_MAGIC_BYTES, 0, 16) != 0:
            raise NotAnElf("neither an ELF file nor a fatbin")
        return parse_fatbin(data, into=found)  # a bare .fatbin file
    for offset, size in fatbin_sections(data):
        parse_fatbin(data, offset, offset + size, into=found)
    return found


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps({p: scan_library(Path(p)).as_dict() for p in sys.argv[1:]}, indent=1))
