"""Runs inside an image (or on a host) and prints one JSON document describing it.

Standard library only: it must run in any image with a Python. It uses torch when torch is
importable. Usage: python3 probe.py PACKAGE [PACKAGE ...]  (the packages to report on).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import metadata

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


def main(argv: list[str]) -> int:
    report = {
        "probe_version": 1,
        "python": {"executable": sys.executable, "version": sys.version.split()[0],
                   "prefix": sys.prefix, "base_prefix": sys.base_prefix, "path": sys.path,
                   "in_virtualenv": sys.prefix != sys.base_prefix},
        "interpreters": interpreters(),
        "conda": conda(),
        "pip_check": pip_check(),
        "packages": packages(argv),
        "torch": torch_facts(),
    }
    json.dump(report, sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
