"""Compare a probe's JSON with what images.toml promises; one small function per check.

Add a check: write `def check_x(want: Expectation, probe: dict) -> list[Result]` and list it
in CHECKS. A check that cannot be judged says 'not checked' with the reason, never 'pass'.
"""

from __future__ import annotations

from collections.abc import Callable

from packaging.utils import canonicalize_name

from build_graph.manifest.expectation import Expectation
from build_graph.oci.layer_limits import amount, over, problem
from build_graph.verify.apt_check import check_apt_lock
from build_graph.verify.device import (
    check_arch_list,
    check_binaries,
    check_gpu,
    check_libraries_readable,
    check_targets,
    check_torch_cuda,
)
from build_graph.verify.lock_check import check_python_lock
from build_graph.verify.probe_output import ProbeOutput
from build_graph.verify.results import Result, Status

_SHOW = 8  # list at most this many names in one line


def _names(items: list[str]) -> str:
    more = f" and {len(items) - _SHOW} more" if len(items) > _SHOW else ""
    return ", ".join(items[:_SHOW]) + more


def check_probe_errors(want: Expectation, probe: ProbeOutput) -> list[Result]:
    """A part of the probe that could not run is a failure, not a silent gap."""
    return [
        Result(f"probe: {section}", "fail", "ran", error)
        for section, error in sorted((probe.get("errors") or {}).items())
    ]


def check_platform(want: Expectation, probe: ProbeOutput) -> list[Result]:
    """One platform's image of a tier built per platform: its config names the platform
    (what an index entry will claim) and its Python runs as that machine (what a host of
    that kind will execute); either one wrong is a failure."""
    if want.platform is None or want.machine is None:
        return []
    config = str(probe.get("image_platform") or "unknown")
    machine = str((probe.get("python") or {}).get("machine") or "unknown")
    return [
        Result(
            "platform (image config)",
            "pass" if config == want.platform else "fail",
            want.platform,
            config,
        ),
        Result(
            "platform (machine)",
            "pass" if machine == want.machine else "fail",
            want.machine,
            machine,
        ),
    ]


def check_python(want: Expectation, probe: ProbeOutput) -> list[Result]:
    if want.python is None or not probe.get("python"):
        return []
    actual = str(probe["python"]["version"])
    ok = actual == want.python or actual.startswith(want.python + ".")
    return [Result("python version", "pass" if ok else "fail", want.python, actual)]


def check_conda(want: Expectation, probe: ProbeOutput) -> list[Result]:
    found = probe.get("conda")
    if want.conda or found is None:
        return []
    if found["found"]:
        where = _names([f"{p['path']} ({p['why']})" for p in found["places"]])
        return [Result("no conda", "fail", "no conda", f"conda at {where}")]
    if not found.get("complete", True):
        return [
            Result(
                "no conda",
                "not checked",
                "no conda",
                "the file-system walk hit its limit before it finished",
            )
        ]
    return [Result("no conda", "pass", "no conda", "no conda")]


def check_single_python(want: Expectation, probe: ProbeOutput) -> list[Result]:
    found = probe.get("interpreters")
    if not want.single_python or found is None:
        return []
    envs = found["found"]
    actual = (
        _names(
            [
                f"{i['names'][0]} ({i['implementation']} {i['version']}, prefix {i['prefix']})"
                for i in envs
            ]
        )
        or "none"
    )
    if len(envs) > 1:
        return [Result("one Python", "fail", "exactly one", f"{len(envs)}: {actual}")]
    if not found.get("complete", True):
        return [
            Result(
                "one Python",
                "not checked",
                "exactly one",
                f"the search hit its limit (found {actual})",
            )
        ]
    return [Result("one Python", "pass" if len(envs) == 1 else "fail", "exactly one", actual)]


def check_virtualenv(want: Expectation, probe: ProbeOutput) -> list[Result]:
    """python3 on PATH must not be a virtualenv that hides the image's own packages."""
    venv = probe.get("virtualenv")
    if not want.single_python or venv is None:
        return []
    hidden = [*venv["hides"], *venv["shadows"]]
    actual = (
        f"{venv['prefix']} over {venv['base_executable']}; hides "
        f"{_names(hidden) if hidden else 'nothing'}"
    )
    return [
        Result(
            "no shadowing virtualenv",
            "fail" if venv["hides_packages"] else "pass",
            "python3 sees the image's packages",
            actual,
        )
    ]


def check_pip(want: Expectation, probe: ProbeOutput) -> list[Result]:
    result = probe.get("pip_check")
    if not want.pip_check or result is None:
        return []
    if result["ok"]:
        return [Result("pip check", "pass", "clean", "clean")]
    lines = [line for line in str(result["output"]).splitlines() if line.strip()]
    allowed = [
        line
        for line in lines
        if _pip_name(line) in want.pip_check_allow and line.rstrip().endswith(_UNSUPPORTED)
    ]
    rest = [line for line in lines if line not in allowed]
    if allowed and not rest:
        return [
            Result(
                "pip check",
                "pass",
                "clean",
                "clean but for verify.pip_check_allow: " + "; ".join(allowed)[:400],
            )
        ]
    return [Result("pip check", "fail", "clean", "; ".join(rest)[:400])]


# The one complaint pip_check_allow accepts: a wheel tag pip does not know. A missing or
# conflicting requirement of an allowed distribution still fails.
_UNSUPPORTED = "is not supported on this platform"


def _pip_name(line: str) -> str:
    """The distribution a `pip check` line is about ('nvidia-cusparselt-cu13 0.8.0 is not
    supported on this platform'), PEP 503-normalized."""
    return canonicalize_name(line.split()[0]) if line.split() else ""


def check_packages(want: Expectation, probe: ProbeOutput) -> list[Result]:
    installed_versions = probe.get("packages") or {}
    results = []
    for name, spec in sorted(want.packages.items()):
        installed = installed_versions.get(name)
        results.append(
            Result(
                f"package {name}",
                _satisfies(installed, spec),
                spec or "any",
                installed or "not installed",
            )
        )
    return results


def _satisfies(installed: str | None, spec: str) -> Status:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    if installed is None:
        return "fail"
    try:
        return (
            "pass" if SpecifierSet(spec).contains(Version(installed), prereleases=True) else "fail"
        )
    except (InvalidSpecifier, InvalidVersion):
        return "fail"


def check_imports(want: Expectation, probe: ProbeOutput) -> list[Result]:
    """Each installed package really imports, in a fresh interpreter inside the image."""
    return [
        Result(
            f"import {entry['module']}",
            "pass" if entry["ok"] else "fail",
            f"{entry['package']} imports",
            "imported" if entry["ok"] else f"{entry['package']}: {entry['error']}",
        )
        for _, entry in sorted((probe.get("imports") or {}).items())
    ]


def check_size(want: Expectation, probe: ProbeOutput) -> list[Result]:
    size = probe.get("image_size_bytes")
    if want.max_size_bytes is None:
        return []
    expected = f"<= {want.max_size_bytes / 2**30:.2f} GiB"
    if size is None:
        return [Result("image size", "not checked", expected, "the daemon reported no size")]
    ok = int(size) <= want.max_size_bytes
    return [
        Result("image size", "pass" if ok else "fail", expected, f"{int(size) / 2**30:.2f} GiB")
    ]


def check_layers(want: Expectation, probe: ProbeOutput) -> list[Result]:
    """Every layer within the largest the registry takes: a registry that refuses or serves
    in part a bigger one fails a later push or pull, not this one (oci/layer_limits.py)."""
    if want.max_layer is None:
        return []
    sizes = [int(layer["size"]) for layer in probe.get("layers") or []]
    expected = f"<= {want.max_layer}"
    if not sizes:
        return [Result("layer size", "not checked", expected, "no layers were read")]
    if over(sizes, want.max_layer):
        return [Result("layer size", "fail", expected, problem(sizes, want.max_layer))]
    largest = max(range(len(sizes)), key=sizes.__getitem__)
    said = f"largest: layer {largest + 1} of {len(sizes)}, {amount(sizes[largest])}"
    return [Result("layer size", "pass", expected, said)]


def check_smoke(want: Expectation, probe: ProbeOutput) -> list[Result]:
    return [
        Result(
            f"smoke: {s['command']}",
            "pass" if s["exit_code"] == 0 else "fail",
            "exit 0",
            f"exit {s['exit_code']}: {s['output'][-200:]}",
        )
        for s in probe.get("smoke", [])
    ]


Check = Callable[[Expectation, ProbeOutput], list[Result]]
CHECKS: tuple[Check, ...] = (
    check_probe_errors,
    check_platform,
    check_python,
    check_conda,
    check_single_python,
    check_virtualenv,
    check_pip,
    check_packages,
    check_python_lock,
    check_apt_lock,
    check_imports,
    check_torch_cuda,
    check_arch_list,
    check_libraries_readable,
    check_binaries,
    check_targets,
    check_gpu,
    check_size,
    check_layers,
    check_smoke,
)


def evaluate(want: Expectation, probe: ProbeOutput) -> list[Result]:
    return [result for check in CHECKS for result in check(want, probe)]
