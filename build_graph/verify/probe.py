"""Runs inside an image (or on a host) and prints one JSON document describing it.

Standard library only: it must run in any image with a Python. It uses torch when torch is
importable, and fatbin.py (mounted beside it) to read CUDA libraries.
Usage: python3 probe.py '{"packages": [...], "libraries": [globs], "gpu": true}'
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

try:
    from build_graph.verify import fatbin  # the doctor, on a host with this package
except ImportError:  # in an image: fatbin.py is mounted beside this file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fatbin  # type: ignore[import-not-found,no-redef]

PREFIXES = ("/usr/bin", "/usr/local/bin", "/bin", "/opt/conda/bin", "/opt/python/bin")
CONDA_PLACES = ("/opt/conda", "/opt/miniconda", "/opt/miniconda3", "/opt/anaconda3",
                "/root/miniconda3", "/root/anaconda3", "/usr/local/conda")
BASE_PACKAGES = ("pip", "setuptools", "wheel", "numpy", "torch", "torchvision", "torchaudio")


def interpreters() -> list[dict[str, object]]:
    """Every distinct Python interpreter on PATH or in the usual prefixes (by real path)."""
    folders = [*os.environ.get("PATH", "").split(os.pathsep), *PREFIXES]
    found: dict[str, dict[str, object]] = {}
    for folder in dict.fromkeys(f for f in folders if f and os.path.isdir(f)):
        for name in sorted(os.listdir(folder)):
            if not _is_python_name(name):
                continue
            path = os.path.join(folder, name)
            real = os.path.realpath(path)
            if not os.access(real, os.X_OK) or os.path.isdir(real):
                continue
            entry = found.setdefault(real, {"real_path": real, "names": [], "version": None})
            names = entry["names"]
            assert isinstance(names, list)
            names.append(path)
    for entry in found.values():
        entry["version"] = _version_of(str(entry["real_path"]))
    return [e for e in found.values() if e["version"]]


def _is_python_name(name: str) -> bool:
    if name in ("python", "python3"):
        return True
    rest = name.removeprefix("python3.")
    return rest != name and rest.isdigit()


def _version_of(executable: str) -> str | None:
    try:
        out = subprocess.run([executable, "-c", "import sys; print(sys.version.split()[0])"],
                             capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def conda() -> dict[str, object]:
    places = [p for p in CONDA_PLACES if os.path.exists(p)]
    meta = [os.path.join(p, "conda-meta") for p in (sys.prefix, *CONDA_PLACES)
            if os.path.isdir(os.path.join(p, "conda-meta"))]
    return {"found": bool(places or meta or os.environ.get("CONDA_PREFIX")
                          or shutil.which("conda")),
            "places": places, "conda_meta": meta, "conda_prefix": os.environ.get("CONDA_PREFIX"),
            "executable": shutil.which("conda")}


def pip_check() -> dict[str, object]:
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True,
                             text=True, timeout=120, check=False)
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


def torch_facts() -> dict[str, object] | None:
    try:
        import torch  # type: ignore[import-not-found,unused-ignore]
    except Exception:  # an image without torch, or a broken one: report, never crash
        return None
    facts: dict[str, object] = {
        "version": torch.__version__, "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "arch_list": list(torch.cuda.get_arch_list()) if torch.version.cuda else [],
        "lib_dir": os.path.join(os.path.dirname(torch.__file__), "lib"),
        "cuda_available": bool(torch.cuda.is_available()),
    }
    return facts


def libraries(patterns: list[str], torch: dict[str, object] | None) -> dict[str, object]:
    """SASS/PTX archs of torch/lib/*.so* (when torch is there) and of the given globs."""
    if torch is not None:
        patterns = [os.path.join(str(torch["lib_dir"]), "*.so*"), *patterns]
    found: dict[str, object] = {}
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            if os.path.isfile(path) and not os.path.islink(path):
                try:
                    found[path] = fatbin.scan_library(Path(path)).as_dict()
                except (OSError, ValueError) as exc:
                    found[path] = {"error": str(exc)}
    return found


def gpu_facts() -> dict[str, object] | None:
    """The device and a real kernel launch, through torch; None without a usable GPU."""
    try:
        import torch
    except Exception:
        return None
    if not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability(0)
    facts: dict[str, object] = {"name": torch.cuda.get_device_name(0),
                                "capability": [major, minor], "driver": _driver_version()}
    try:
        values = torch.arange(4096, device="cuda", dtype=torch.float32)
        total = float((values * 2 + 1).sum().item())
        torch.cuda.synchronize()
        facts["launch"] = {"ok": total == 4096.0 * 4096.0, "result": total}
    except Exception as exc:  # "no kernel image is available" lands here
        facts["launch"] = {"ok": False, "error": str(exc).splitlines()[0]}
    return facts


def _driver_version() -> str | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=30, check=False)
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout else None


def main(argv: list[str]) -> int:
    request = json.loads(argv[0]) if argv else {}
    torch = torch_facts()
    report = {
        "probe_version": 1,
        "python": {"executable": sys.executable, "version": sys.version.split()[0],
                   "prefix": sys.prefix, "base_prefix": sys.base_prefix, "path": sys.path,
                   "in_virtualenv": sys.prefix != sys.base_prefix},
        "interpreters": interpreters(),
        "conda": conda(),
        "pip_check": pip_check(),
        "packages": packages(list(request.get("packages", []))),
        "torch": torch,
        "libraries": libraries(list(request.get("libraries", [])), torch),
        "gpu": gpu_facts() if request.get("gpu") else None,
    }
    json.dump(report, sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
