"""Checks of the device code: torch's own answers, every CUDA library, targets, a kernel.

Each library the probe read is accounted for: one it could not read is a failure naming the
file, never a library that silently drops out of "every promised arch in every library".
"""

from __future__ import annotations

from typing import Any

from build_graph.gpu.archs import Arch, Coverage, coverage, parse_arch
from build_graph.manifest.expectation import Expectation
from build_graph.verify.probe_output import ProbeOutput
from build_graph.verify.results import Result, Status


def _torch(probe: ProbeOutput) -> tuple[dict[str, Any] | None, str | None]:
    """(torch's facts, why they are missing) — torch installed but broken is a reason."""
    torch = probe.get("torch")
    if torch is None:
        return None, None
    if torch.get("import_error"):
        return None, f"torch does not import: {torch['import_error']}"
    return torch, None


def check_torch_cuda(want: Expectation, probe: ProbeOutput) -> list[Result]:
    torch, broken = _torch(probe)
    if want.cuda is None or (torch is None and broken is None):
        return []
    actual = broken or str(torch.get("cuda") if torch else None)
    return [Result("torch CUDA", "pass" if actual == want.cuda else "fail", want.cuda, actual)]


def check_arch_list(want: Expectation, probe: ProbeOutput) -> list[Result]:
    torch, broken = _torch(probe)
    if not want.archs or not want.torch_archs or (torch is None and broken is None):
        return []
    expected = ", ".join(f"sm_{a.replace('.', '')}" for a in want.archs)
    if torch is None:
        return [Result("torch arch list", "fail", expected, str(broken))]
    compiled = set(torch.get("arch_list") or [])
    missing = [a for a in want.archs if f"sm_{a.replace('.', '')}" not in compiled]
    return [
        Result(
            "torch arch list",
            "fail" if missing else "pass",
            expected,
            ", ".join(sorted(compiled)) or "none",
        )
    ]


def check_libraries_readable(want: Expectation, probe: ProbeOutput) -> list[Result]:
    """A library the reader could not parse is a failure naming it (never skipped)."""
    return [
        Result(f"readable {path}", "fail", "a readable ELF library", str(entry["error"]))
        for path, entry in sorted((probe.get("libraries") or {}).items())
        if entry.get("error")
    ]


def fatbins(probe: ProbeOutput) -> dict[str, tuple[list[Arch], list[Arch]]]:
    """Libraries that carry device code: name -> (SASS archs, PTX archs)."""
    found = {}
    for path, entry in (probe.get("libraries") or {}).items():
        if entry.get("sass") or entry.get("ptx"):
            found[path.rsplit("/", 1)[-1]] = (
                [parse_arch(a)[0] for a in entry["sass"]],
                [parse_arch(a)[0] for a in entry["ptx"]],
            )
    return found


def check_binaries(want: Expectation, probe: ProbeOutput) -> list[Result]:
    """Every promised arch is really in each CUDA library, as SASS (and PTX where promised)."""
    if not want.archs:
        return []
    libraries = fatbins(probe)
    scanned = probe.get("libraries") or {}
    if not libraries:
        if not scanned and probe.get("torch") is None and not want.libraries:
            return []  # nothing in this image claims device code
        where = ", ".join(sorted(scanned)) or "no library matched"
        return [
            Result(
                "device code",
                "fail",
                "SASS for " + ", ".join(want.archs),
                f"no readable fatbin in {where}",
            )
        ]
    results = []
    for name, (sass, ptx) in sorted(libraries.items()):
        have_sass, have_ptx = {str(a) for a in sass}, {str(a) for a in ptx}
        missing = [f"SASS {a}" for a in want.archs if a not in have_sass]
        missing += [f"PTX {a}" for a in want.ptx if a not in have_ptx]
        actual = (
            f"SASS {', '.join(sorted(have_sass)) or '-'}; PTX {', '.join(sorted(have_ptx)) or '-'}"
        )
        if missing:
            actual += f" (missing {', '.join(missing)})"
        expected = f"SASS {', '.join(want.archs)}; PTX {', '.join(want.ptx) or '-'}"
        results.append(Result(f"archs in {name}", "fail" if missing else "pass", expected, actual))
    return results


def check_targets(want: Expectation, probe: ProbeOutput) -> list[Result]:
    """Each gpu.targets GPU can run every CUDA library (CUDA's compatibility rules)."""
    libraries = fatbins(probe)
    results = []
    for label, cc in want.targets if libraries else []:
        lines, worst = [], Coverage.EXACT_SASS
        for name, (sass, ptx) in sorted(libraries.items()):
            result = coverage(sass, ptx, cc)
            if result.coverage is not Coverage.EXACT_SASS:
                lines.append(f"{name}: {result.describe(cc)}")
            if list(Coverage).index(result.coverage) > list(Coverage).index(worst):
                worst = result.coverage
        status: Status = "fail" if worst is Coverage.NONE else "pass"
        actual = "; ".join(lines) or f"own SASS sm_{cc[0]}{cc[1]} in every library"
        results.append(Result(f"runs on {label}", status, "runnable", actual))
    return results


def check_gpu(want: Expectation, probe: ProbeOutput) -> list[Result]:
    """A kernel really launches on a GPU and gives the right answer; without a GPU,
    'not checked' (the tier's verify.gpu policy decides whether that blocks promotion)."""
    if not want.wants_gpu:
        return []
    gpu = probe.get("gpu")
    if gpu is None:
        _, broken = _torch(probe)
        reason = broken or probe.get("gpu_absent_reason") or "no GPU"
        status: Status = "fail" if broken else "not checked"
        return [Result("GPU kernel launch", status, "a kernel runs", reason, gpu=True)]
    launch = gpu.get("launch") or {}
    cc = tuple(gpu["capability"])
    actual = f"{gpu['name']} (sm_{cc[0]}{cc[1]}, driver {gpu.get('driver')}): " + (
        "ran, correct result"
        if launch.get("ok")
        else f"failed: {launch.get('error', launch.get('result'))}"
    )
    return [
        Result(
            "GPU kernel launch",
            "pass" if launch.get("ok") else "fail",
            "a kernel runs",
            actual,
            gpu=True,
        )
    ]


def gpu_code_paths(probe: ProbeOutput) -> list[str]:
    """Information, not a check: which code each library would run on the GPU present."""
    gpu = probe.get("gpu")
    if gpu is None:
        return []
    cc = (int(gpu["capability"][0]), int(gpu["capability"][1]))
    return [
        f"{name}: {coverage(sass, ptx, cc).describe(cc)}"
        for name, (sass, ptx) in sorted(fatbins(probe).items())
    ]
