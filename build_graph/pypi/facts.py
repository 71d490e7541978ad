"""Rows of torch_releases.json read from an index: a release's Linux x86_64 wheel, its
METADATA, and what its `Requires-Dist` says (for torch: triton and the CUDA runtime; for
torchvision/torchaudio: the torch release pinned).

The requirements are read as pip would on Linux x86_64 with the wheel's own Python: each
marker is evaluated there, so `triton==3.0.0; platform_machine == "x86_64" and
python_version < "3.13"` counts for a cp310 wheel. What the METADATA said, seen for real
(torch 2.0.0 .. 2.15.0 on pypi.org, read 2026-11-23):
- torch <= 2.10: `nvidia-cuda-runtime-cu11/cu12==V`, `triton==V`;
- torch >= 2.11: `cuda-toolkit[cudart,...]==V` (the CUDA 13 wheels), triton `==` or `~=`;
- torchvision: `torch==V` (old ones `torch (==V)`) up to 0.29.0, then `torch (>=2.14.0)`
  (0.29.1, and 0.29.2 as a py3-none wheel); torchaudio: `torch==V` up to 2.10.0, no torch
  requirement at all from 2.11.0.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email.message import Message

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from build_graph.errors import IndexAnswerRefused
from build_graph.gpu.releases import Partner, PartnerRow, TorchRow
from build_graph.pypi.simple import IndexFile, Project
from build_graph.pypi.wheel_metadata import read_metadata
from build_graph.settings import redact, without_userinfo

_CUDA_RUNTIME = re.compile(r"^nvidia-cuda-runtime(-cu\d+)?$")
_PYTHON = re.compile(r"^(?:cp|py)(\d)(\d*)-")
DEFAULT_MINOR = "12"
_LINUX_X86_64 = {
    "platform_system": "Linux",
    "sys_platform": "linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "extra": "",
}


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def linux_wheel(project: Project, version: Version) -> IndexFile | None:
    """The release's first Linux x86_64 wheel by file name (stable across runs)."""
    found = [
        w
        for w in project.wheels(version)
        if any("linux" in t and t.endswith("x86_64") and _PYTHON.match(t) for t in w.tags)
    ]
    return min(found, key=lambda w: w.filename) if found else None


def torch_row(project: Project, version: Version, day: str) -> TorchRow | None:
    """The torch release's row; None when it has no Linux x86_64 wheel."""
    wheel = linux_wheel(project, version)
    if wheel is None:
        return None
    triton = cuda = cuda_requirement = None
    for req in requirements(wheel, read_metadata(wheel.url), "torch", version):
        if req.name in ("triton", "pytorch-triton"):
            triton = str(req.specifier)
        pinned = _pin(req)
        if pinned and (
            _CUDA_RUNTIME.match(req.name) or (req.name == "cuda-toolkit" and "cudart" in req.extras)
        ):
            cuda_requirement = f"{req.name}=={pinned}"
            cuda = ".".join(pinned.split(".")[:2])
    return TorchRow(str(version), triton, cuda, cuda_requirement, without_userinfo(wheel.url), day)


def partner_row(name: Partner, project: Project, version: Version, day: str) -> PartnerRow | None:
    """The partner release's row (the torch it pins); None without a Linux x86_64 wheel."""
    wheel = linux_wheel(project, version)
    if wheel is None:
        return None
    torch = None
    for req in requirements(wheel, read_metadata(wheel.url), name, version):
        if req.name == "torch":
            torch = str(req.specifier) or None
    return PartnerRow(name, str(version), torch, without_userinfo(wheel.url), day)


def requirements(
    wheel: IndexFile, metadata: Message, name: str, version: Version
) -> list[Requirement]:
    """The wheel's requirements that hold on Linux x86_64 with its Python, checked at the
    door: the METADATA must be this project's and this release's."""
    said = (canonicalize_name(str(metadata.get("Name", ""))), str(metadata.get("Version", "")))
    if said[0] != canonicalize_name(name) or not _is(said[1], version):
        raise IndexAnswerRefused(
            f"{redact(wheel.url)}: its METADATA names {said[0]} "
            f"{said[1]!r:.40}, not {name} {version}; refused"
        )
    major, minor = min((m[1], m[2]) for t in wheel.tags if (m := _PYTHON.match(t)))
    python = f"{major}.{minor or DEFAULT_MINOR}"  # a py3 wheel: as the newest Python sees it
    env = {**_LINUX_X86_64, "python_version": python, "python_full_version": f"{python}.0"}
    found = []
    for line in metadata.get_all("Requires-Dist") or []:
        try:
            req = Requirement(str(line))
        except InvalidRequirement as exc:
            raise IndexAnswerRefused(
                f"{redact(wheel.url)}: Requires-Dist {str(line)[:80]!r} does not parse ({exc})"
            ) from None
        if req.marker is None or req.marker.evaluate(env):
            req.name = canonicalize_name(req.name)
            found.append(req)
    return found


def _pin(req: Requirement) -> str | None:
    """'X' of a requirement `name==X` (one exact, non-wildcard pin), else None."""
    specs = list(req.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        return str(Version(specs[0].version))
    return None


def _is(text: str, version: Version) -> bool:
    try:
        return Version(text) == version
    except ValueError:
        return False
