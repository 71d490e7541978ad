"""Runs inside an image (or on a host) and writes one JSON document describing it.

Standard library only: it must run in any image with a Python; fatbin.py and finder.py are
mounted beside it. Everything that loads foreign code (importing a package, torch, a kernel
launch) runs in a fresh interpreter, so a broken extension is reported, never fatal. Each
section is guarded: a section that fails is named in "errors" and the others still report.
Usage: python3 probe.py '{"packages": [...], "imports": [...], "libraries": [globs], "gpu":
true, "inventory": true, "out": "/tmp/report.json"}' (else, or unwritable: to stdout).
"""

from __future__ import annotations

import glob
import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from functools import partial
from importlib import metadata
from pathlib import Path

try:  # the doctor, on a host with this package
    from build_graph.verify.in_image import fatbin, finder, inventory
except ImportError:  # in an image: the files are mounted beside this one
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fatbin  # type: ignore[import-not-found,no-redef]
    import finder  # type: ignore[import-not-found,no-redef]
    import inventory  # type: ignore[import-not-found,no-redef]

BASE_PACKAGES = ("pip", "setuptools", "wheel", "numpy", "torch", "torchvision", "torchaudio")
TORCH_FAMILY = ("torch", "torchvision", "torchaudio")
BOOTSTRAP = {"pip", "setuptools", "wheel"}
IMPORT_S = 300
IMPORT = "import importlib, sys; importlib.import_module(sys.argv[1])"
TORCH = r"""
import json, sys
import torch
facts = {"version": torch.__version__, "cuda": torch.version.cuda,
         "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
         "arch_list": list(torch.cuda.get_arch_list()) if torch.version.cuda else [],
         "cuda_available": bool(torch.cuda.is_available()), "gpu": None}
if sys.argv[1] == "gpu" and torch.cuda.is_available():
    major, minor = torch.cuda.get_device_capability(0)
    gpu = {"name": torch.cuda.get_device_name(0), "capability": [major, minor]}
    try:
        values = torch.arange(4096, device="cuda", dtype=torch.float32)
        total = float((values * 2 + 1).sum().item())
        torch.cuda.synchronize()
        gpu["launch"] = {"ok": total == 4096.0 * 4096.0, "result": total}
    except Exception as exc:  # "no kernel image is available" lands here
        gpu["launch"] = {"ok": False, "error": str(exc).splitlines()[0]}
    facts["gpu"] = gpu
print(json.dumps(facts))
"""


def python_facts() -> dict[str, object]:
    return {
        "executable": sys.executable,
        "real_path": os.path.realpath(sys.executable),
        "version": sys.version.split()[0],
        "prefix": sys.prefix,
        "base_prefix": sys.base_prefix,
        "in_virtualenv": sys.prefix != sys.base_prefix,
        "base_executable": getattr(sys, "_base_executable", None),
        "machine": platform.machine(),
    }


def distributions() -> dict[str, str]:
    """Normalised name -> version of every distribution this interpreter sees."""
    return {_norm(d.metadata["Name"] or ""): d.version for d in metadata.distributions()}


def virtualenv() -> dict[str, object] | None:
    """The virtualenv this Python runs in, and what of the base Python it hides."""
    if sys.prefix == sys.base_prefix:
        return None
    base = str(getattr(sys, "_base_executable", "") or "")
    code = (
        "import json; from importlib import metadata as m; print(json.dumps("
        "{d.metadata['Name']: d.version for d in m.distributions()}))"
    )
    out = subprocess.run(
        [base, "-I", "-B", "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    below = {_norm(k): v for k, v in json.loads(out.stdout).items()} if out.returncode == 0 else {}
    here = distributions()
    hidden = sorted(f"{n} {v}" for n, v in below.items() if n not in here)
    shadowed = sorted(
        f"{n} {below[n]} (venv has {v})" for n, v in here.items() if n in below and below[n] != v
    )
    serious = [h for h in hidden + shadowed if h.split()[0] not in BOOTSTRAP]
    return {
        "prefix": sys.prefix,
        "base_executable": base,
        "base_prefix": sys.base_prefix,
        "hides": hidden,
        "shadows": shadowed,
        "hides_packages": bool(serious),
    }


def pip_check() -> dict[str, object]:
    try:
        out = subprocess.run(
            [sys.executable, "-B", "-m", "pip", "check"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"ok": False, "output": str(exc)}
    return {"ok": out.returncode == 0, "output": (out.stdout + out.stderr).strip()[-4000:]}


def packages(names: list[str]) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in dict.fromkeys([*BASE_PACKAGES, *names]):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def modules_of(name: str) -> list[str]:
    """The top-level modules a distribution installs; its own name first when it has one."""
    dist = metadata.distribution(name)
    top = [line.strip() for line in (dist.read_text("top_level.txt") or "").splitlines()]
    if not any(top):
        top = [
            Path(str(f)).parts[0].split(".")[0]
            for f in dist.files or []
            if not Path(str(f)).parts[0].endswith((".dist-info", ".data", ".egg-info"))
        ]
    top = [m for m in dict.fromkeys(top) if m and m.isidentifier() and not m.startswith("_")]
    own = [m for m in top if _norm(m) == _norm(name)]
    return own or top[:3]


def imports(names: list[str]) -> dict[str, dict[str, object]]:
    """Import each installed distribution's modules in a fresh interpreter."""
    results: dict[str, dict[str, object]] = {}
    for name in dict.fromkeys(names):
        try:
            modules = modules_of(name)
        except metadata.PackageNotFoundError:
            continue  # not installed: the package check says so
        for module in modules:
            results[f"{name}:{module}"] = {"package": name, "module": module, **_try_import(module)}
    return results


def _try_import(module: str) -> dict[str, object]:
    try:
        out = subprocess.run(
            [sys.executable, "-B", "-c", IMPORT, module],
            capture_output=True,
            text=True,
            timeout=IMPORT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"import took over {IMPORT_S} s"}
    return {"ok": out.returncode == 0, "error": _last_line(out.stderr, out.returncode)}


def torch_facts(gpu: bool) -> dict[str, object] | None:
    """torch's own answers, from a torch that really imported; None without torch."""
    try:
        metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None
    try:
        out = subprocess.run(
            [sys.executable, "-B", "-c", TORCH, "gpu" if gpu else "cpu"],
            capture_output=True,
            text=True,
            timeout=IMPORT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"import_error": f"import torch took over {IMPORT_S} s"}
    if out.returncode != 0:
        return {"import_error": _last_line(out.stderr, out.returncode)}
    try:
        facts: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"import_error": f"torch printed no facts: {out.stdout[-300:]!r}"}
    if isinstance(facts.get("gpu"), dict):
        facts["gpu"]["driver"] = _driver_version()  # type: ignore[index]
    return facts


def _driver_version() -> str | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    out = subprocess.run(
        [smi, "--query-gpu=driver_version", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout else None


def torch_lib_dir() -> str | None:
    """torch/lib, found through pip's metadata: readable even when torch does not import."""
    try:
        return str(metadata.distribution("torch").locate_file("torch/lib"))
    except metadata.PackageNotFoundError:
        return None


def libraries(patterns: list[str], with_torch: bool = True) -> dict[str, object]:
    """SASS/PTX archs of torch/lib/*.so* (unless with_torch is false) and of the given
    globs; an error names the file."""
    lib_dir = torch_lib_dir() if with_torch else None
    if lib_dir is not None:
        patterns = [os.path.join(lib_dir, "*.so*"), *patterns]
    found: dict[str, object] = {}
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            if os.path.isfile(path) and not os.path.islink(path):
                try:
                    found[path] = fatbin.scan_library(Path(path)).as_dict()
                except fatbin.FatbinError as exc:
                    found[path] = {"error": f"{type(exc).__name__}: {exc}"}
    return found


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _last_line(text: str, code: int) -> str | None:
    if code == 0:
        return None
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:500] if lines else f"exit {code} with no message"


def main(argv: list[str]) -> int:
    request = json.loads(argv[0]) if argv else {}
    report: dict[str, object] = {"probe_version": 2, "errors": {}}

    def section(name: str, fn: Callable[[], object]) -> object:
        try:
            report[name] = fn()
        except Exception as exc:  # one broken section never hides the others
            report[name] = None
            report["errors"][name] = f"{type(exc).__name__}: {exc}"  # type: ignore[index]
        return report[name]

    # The sections that wait on other processes (each interpreter asked, pip check, each
    # import and torch in a fresh interpreter) run side by side with the rest.
    asked = request.get
    imported, gpu = [*asked("imports", []), *TORCH_FAMILY], bool(asked("gpu"))
    libs, torch_libs = list(asked("libraries", [])), bool(asked("torch_libraries", True))
    with ThreadPoolExecutor(max_workers=4) as pool:
        waiting = [
            pool.submit(section, "pip_check", pip_check),
            pool.submit(section, "imports", lambda: imports(imported)),
            pool.submit(section, "torch", lambda: torch_facts(gpu)),
        ]
        section("python", python_facts)
        survey = section("survey", finder.walk)
        if isinstance(survey, finder.Survey):
            report["survey"] = survey.as_dict()
            waiting.append(
                pool.submit(section, "interpreters", partial(finder.interpreters, survey))
            )
            section("conda", partial(finder.conda, survey))
        section("virtualenv", virtualenv)
        section("packages", lambda: packages(list(asked("packages", []))))
        section("distributions", inventory.pip_distributions)
        section("requires", inventory.pip_requirements)
        section("debian", inventory.dpkg_database)
        section("libraries", lambda: libraries(libs, torch_libs))
        for job in waiting:  # what no section caught (SystemExit) ends the probe, said
            job.result()
    torch = report.get("torch")
    report["gpu"] = torch.pop("gpu", None) if isinstance(torch, dict) else None
    if request.get("inventory"):  # for the SBOM (stages/sbom.py); the doctor skips it
        section("inventory", inventory.collect)
    text = json.dumps(report, indent=1, sort_keys=True) + "\n"
    out = request.get("out")
    with suppress(OSError):  # an unwritable /tmp: stdout still carries it
        if out:  # read back from the stopped container: complete, unlike its logs
            Path(out).write_text(text, encoding="utf-8")
            return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
