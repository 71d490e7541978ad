"""Compare a probe's JSON with what images.toml promises; one small function per check.

Add a check: write `def check_x(want: Expectation, probe: dict) -> list[Result]` and list it
in CHECKS. A check that cannot be judged says 'not checked: <why>', never 'pass'.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from build_graph.gpu_rules import parse_arch
from build_graph.model import VariantSpec, VerifySpec

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


def expectation(chain: list[VerifySpec], variant: VariantSpec) -> Expectation:
    """Merge specs from the root ancestor down to the tier itself (last in `chain`)."""
    own = chain[-1]
    packages: dict[str, str] = {}
    for spec in chain:
        packages.update(dict(spec.packages))
    cuda = variant.versions.get("cuda")
    archs = [str(parse_arch(a)[0]) for a in variant.gpu.arch_list] if own.archs else []
    return Expectation(
        python=next((s.python for s in reversed(chain) if s.python), None),
        conda=own.conda, single_python=own.single_python, pip_check=own.pip_check,
        packages=packages, cuda=".".join(cuda.split(".")[:2]) if cuda else None, archs=archs,
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
                             check_packages, check_torch_cuda, check_arch_list, check_size,
                             check_smoke)


def evaluate(want: Expectation, probe: dict[str, Any]) -> list[Result]:
    return [result for check in CHECKS for result in check(want, probe)]
