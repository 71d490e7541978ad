"""Compare a probe's JSON with what images.toml promises; one small function per check.

Add a check: write `def check_x(want: Expectation, probe: dict) -> list[Result]` and list it
in CHECKS. A check that cannot be judged says 'not checked: <why>', never 'pass'.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from build_graph.gpu.archs import (
    Arch,
    Coverage,
    coverage,
    parse_arch,
    parse_target,
    split_arch_list,
)
from build_graph.manifest.model import VariantSpec, VerifySpec

Status = Literal["pass", "fail", "not checked"]


@dataclass(frozen=True)
class Result:
    name: str
    status: Status
    expected: str
    actual: str

    def line(self) -> str:
        mark = {"pass": "ok  ", "fail": "FAIL", "not checked": "--  "}[self.status]
        return f"  {mark} {self.name}: expected {self.expected}; got {self.actual}"


@dataclass(frozen=True)
class Expectation:
    """A tier's checks merged with its ancestors' (the child's own settings win)."""

    python: str | None
    conda: bool
    single_python: bool
    pip_check: bool
    packages: dict[str, str]
    cuda: str | None  # major.minor torch must report, when torch is in the image
    archs: list[str] = field(default_factory=list)  # promised SASS archs, e.g. ['8.0', '9.0']
    max_size_bytes: int | None = None
    smoke: tuple[str, ...] = ()
    ptx: list[str] = field(default_factory=list)  # promised PTX archs
    targets: list[tuple[str, tuple[int, int]]] = field(default_factory=list)
    libraries: tuple[str, ...] = ()  # globs of CUDA libraries to read, besides torch/lib


def expectation_for(variant: VariantSpec, tier: str) -> Expectation:
    """The merged checks of `tier` and its ancestors (the image tree is the data)."""
    chain = [variant.tier(tier)]
    while chain[0].parent is not None:
        chain.insert(0, variant.tier(chain[0].parent))
    return expectation([t.verify for t in chain], variant)


def expectation(chain: list[VerifySpec], variant: VariantSpec) -> Expectation:
    """Merge specs from the root ancestor down to the tier itself (last in `chain`)."""
    own = chain[-1]
    packages: dict[str, str] = {}
    for spec in chain:
        packages.update(dict(spec.packages))
    cuda = variant.versions.get("cuda")
    sass, ptx = split_arch_list(list(variant.gpu.arch_list), variant.gpu.ptx)
    checked = own.archs and bool(sass)
    targets = [(t, parse_target(t)) for t in variant.gpu.targets] if checked else []
    return Expectation(
        python=next((s.python for s in reversed(chain) if s.python), None),
        conda=own.conda, single_python=own.single_python, pip_check=own.pip_check,
        packages=packages, cuda=".".join(cuda.split(".")[:2]) if cuda else None,
        archs=[str(a) for a in sass] if checked else [],
        ptx=[str(a) for a in ptx] if checked else [], targets=targets,
        libraries=tuple(g for spec in chain for g in spec.cuda_libraries),
        max_size_bytes=next((s.max_size_bytes for s in reversed(chain) if s.max_size_bytes),
                            None),
        smoke=tuple(cmd for spec in chain for cmd in spec.smoke))


def check_python(want: Expectation, probe: dict[str, Any]) -> list[Result]:
    if want.python is None:
        return []
    actual = str(probe["python"]["version"])
    ok = actual == want.python or actual.startswith(want.python + ".")
    return [Result("python version", "pass" if ok else "fail", want.python, actual)]


def check_conda(want: Expectation, probe: dict[str, Any]) -> list[Result]:
    if want.conda:
        return []
    found = probe["conda"]
    where = ", ".join(found["places"] + found["conda_meta"]) or found.get("executable") or ""
    actual = f"conda at {where or found.get('conda_prefix')}" if found["found"] else "no conda"
    return [Result("no conda", "fail" if found["found"] else "pass", "no conda", actual)]


def check_single_python(want: Expectation, probe: dict[str, Any]) -> list[Result]:
    if not want.single_python:
        return []
    found = probe["interpreters"]
    actual = ", ".join(f"{i['real_path']} ({i['version']})" for i in found) or "none"
    return [Result("one Python", "pass" if len(found) == 1 else "fail", "exactly one", actual)]


def check_pip(want: Expectation, probe: dict[str, Any]) -> list[Result]:
    if not want.pip_check:
        return []
    result = probe["pip_check"]
    actual = "clean" if result["ok"] else str(result["output"]).replace("\n", "; ")[:400]
    return [Result("pip check", "pass" if result["ok"] else "fail", "clean", actual)]


def check_packages(want: Expectation, probe: dict[str, Any]) -> list[Result]:
    results = []
    for name, spec in sorted(want.packages.items()):
        installed = probe["packages"].get(name)
        results.append(Result(f"package {name}", _satisfies(installed, spec), spec or "any",
                              installed or "not installed"))
    return results


def _satisfies(installed: str | None, spec: str) -> Status:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    if installed is None:
        return "fail"
    try:
        return "pass" if SpecifierSet(spec).contains(Version(installed), prereleases=True) \
            else "fail"
    except (InvalidSpecifier, InvalidVersion):
        return "fail"


def check_torch_cuda(want: Expectation, probe: dict[str, Any]) -> list[Result]:
    torch = probe.get("torch")
    if torch is None or want.cuda is None:
        return []
    actual = str(torch.get("cuda"))
    return [Result("torch CUDA", "pass" if actual == want.cuda else "fail", want.cuda, actual)]


def check_arch_list(want: Expectation, probe: dict[str, Any]) -> list[Result]:
    torch = probe.get("torch")
    if torch is None or not want.archs:
        return []
    compiled = set(torch.get("arch_list") or [])
    missing = [a for a in want.archs if f"sm_{a.replace('.', '')}" not in compiled]
    actual = ", ".join(sorted(compiled)) or "none"
    return [Result("torch arch list", "fail" if missing else "pass",
                   ", ".join(f"sm_{a.replace('.', '')}" for a in want.archs), actual)]


def _fatbins(probe: dict[str, Any]) -> dict[str, tuple[list[Arch], list[Arch]]]:
    """Libraries that carry device code: name -> (SASS archs, PTX archs)."""
    found = {}
    for path, entry in (probe.get("libraries") or {}).items():
        if entry.get("sass") or entry.get("ptx"):
            found[path.rsplit("/", 1)[-1]] = ([parse_arch(a)[0] for a in entry["sass"]],
                                              [parse_arch(a)[0] for a in entry["ptx"]])
    return found


def check_binaries(want: Expectation, probe: dict[str, Any]) -> list[Result]:
    """Every promised arch is really in each CUDA library, as SASS (and PTX where promised)."""
    if not want.archs:
        return []
    libraries = _fatbins(probe)
    scanned = probe.get("libraries") or {}
    if not libraries:
        if not scanned and probe.get("torch") is None and not want.libraries:
            return []  # nothing in this image claims device code
        where = ", ".join(sorted(scanned)) or "no library matched"
        return [Result("device code", "fail", "SASS for " + ", ".join(want.archs),
                       f"no fatbin in {where}")]
    results = []
    for name, (sass, ptx) in sorted(libraries.items()):
        have_sass, have_ptx = {str(a) for a in sass}, {str(a) for a in ptx}
        missing = [f"SASS {a}" for a in want.archs if a not in have_sass]
        missing += [f"PTX {a}" for a in want.ptx if a not in have_ptx]
        actual = (f"SASS {', '.join(sorted(have_sass)) or '-'}; "
                  f"PTX {', '.join(sorted(have_ptx)) or '-'}")
        if missing:
            actual += f" (missing {', '.join(missing)})"
        expected = f"SASS {', '.join(want.archs)}; PTX {', '.join(want.ptx) or '-'}"
        results.append(Result(f"archs in {name}", "fail" if missing else "pass", expected,
                              actual))
    return results


def check_targets(want: Expectation, probe: dict[str, Any]) -> list[Result]:
    """Each gpu.targets GPU can run every CUDA library (CUDA's compatibility rules)."""
    libraries = _fatbins(probe)
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


def check_gpu(want: Expectation, probe: dict[str, Any]) -> list[Result]:
    """With a GPU present: a kernel really launches and gives the right answer."""
    if not want.archs:
        return []
    gpu = probe.get("gpu")
    if gpu is None:
        reason = probe.get("gpu_absent_reason") or "no GPU"
        return [Result("GPU kernel launch", "not checked", "a kernel runs", reason)]
    launch = gpu.get("launch") or {}
    cc = tuple(gpu["capability"])
    via = [f"{name}: {coverage(sass, ptx, (cc[0], cc[1])).describe((cc[0], cc[1]))}"
           for name, (sass, ptx) in sorted(_fatbins(probe).items())]
    actual = (f"{gpu['name']} (sm_{cc[0]}{cc[1]}, driver {gpu.get('driver')}): "
              + ("ran, correct result" if launch.get("ok") else
                 f"failed: {launch.get('error', launch.get('result'))}"))
    results = [Result("GPU kernel launch", "pass" if launch.get("ok") else "fail",
                      "a kernel runs", actual)]
    results += [Result("GPU code path", "pass", "recorded", line) for line in via[:3]]
    return results


def check_size(want: Expectation, probe: dict[str, Any]) -> list[Result]:
    size = probe.get("image_size_bytes")
    if want.max_size_bytes is None:
        return []
    if size is None:
        return [Result("image size", "not checked", f"<= {want.max_size_bytes}", "unknown")]
    ok = int(size) <= want.max_size_bytes
    return [Result("image size", "pass" if ok else "fail",
                   f"<= {want.max_size_bytes / 2**30:.2f} GiB", f"{int(size) / 2**30:.2f} GiB")]


def check_smoke(want: Expectation, probe: dict[str, Any]) -> list[Result]:
    return [Result(f"smoke: {s['command']}", "pass" if s["exit_code"] == 0 else "fail",
                   "exit 0", f"exit {s['exit_code']}: {s['output'][-200:]}")
            for s in probe.get("smoke", [])]


Check = Callable[[Expectation, dict[str, Any]], list[Result]]
CHECKS: tuple[Check, ...] = (check_python, check_conda, check_single_python, check_pip,
                             check_packages, check_torch_cuda, check_arch_list,
                             check_binaries, check_targets, check_gpu, check_size, check_smoke)


def evaluate(want: Expectation, probe: dict[str, Any]) -> list[Result]:
    return [result for check in CHECKS for result in check(want, probe)]
