"""Find every Python interpreter and conda installation in an image by what it is.

Standard library only: mounted into images beside probe.py. One bounded walk of the file
system (depth, entry count and time limits; symlinks never followed, so no loops; never
onto another file system, never into container storage) collects `bin` folders, virtualenv
roots (`pyvenv.cfg`) and conda roots (`conda-meta`). Interpreters are executables that are
Pythons whatever their name: a name like python3.12 or pypy3, or an ELF file carrying
CPython's entry point. Each candidate is asked, isolated (-I) and writing no bytecode (-B),
what it is; interpreters are told apart by real executable and prefix (a virtualenv is its
own environment even when its binary is a symlink to the system one).

Why -B and no container storage: run on a host (the doctor), an earlier version found the
Pythons inside /var/lib/docker's image layers, ran them, and their __pycache__ writes
changed the layers' contents: Docker then refused to push those images ("file integrity
checksum failed"). Looking must never write.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import asdict, dataclass, field
from typing import Any

PREFIXES = ("/usr/bin", "/usr/local/bin", "/bin", "/usr/sbin", "/sbin")
ROOTS = ("/",)
# Relative to a root: virtual file systems, data-only trees, and container engines' storage
# (other images' files, not this system's).
SKIP = {
    "proc",
    "sys",
    "dev",
    "run",
    "usr/share",
    "usr/include",
    "usr/src",
    "var/cache",
    "var/log",
    "var/lib/dpkg",
    "var/lib/apt",
    "etc/ssl",
    "var/lib/docker",
    "var/lib/containerd",
    "var/lib/containers",
    "var/lib/buildkit",
    "var/lib/kubelet",
    "snap",
}
PRUNE_NAMES = {
    "site-packages",
    "dist-packages",
    "node_modules",
    "__pycache__",
    ".git",
    "include",
    "pkgs",
    "conda-meta",
}
MAX_DEPTH, MAX_DIRS, WALK_S = 8, 200_000, 30.0
MAX_CANDIDATES, ASK_S = 300, 60.0
_NAME_RE = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?([dmu]|-dbg)?$")
_ENTRY_POINTS = (b"Py_BytesMain\0", b"Py_Main\0", b"pypy_main_startup\0")
_SCAN_BYTES = 8 << 20
CONDA_TOOLS = ("conda", "mamba", "micromamba")
STARTUP_FILES = ("/etc/profile", "/etc/bash.bashrc", "/etc/zsh/zshrc", "/etc/zsh/zshenv")
_CONDA_INIT = ("conda initialize", "conda.sh", "mamba initialize", "micromamba shell")
ASK = (
    "import json, os, sys; print(json.dumps([sys.implementation.name, "
    "sys.version.split()[0], os.path.realpath(sys.executable), sys.prefix]))"
)


@dataclass
class Survey:
    """What one walk of the file system found."""

    bins: list[str] = field(default_factory=list)
    venvs: list[str] = field(default_factory=list)  # folders holding pyvenv.cfg
    condas: list[str] = field(default_factory=list)  # folders holding conda-meta
    complete: bool = True
    dirs: int = 0
    seconds: float = 0.0

    def folders(self) -> list[str]:
        """Where executables are looked for: PATH, the usual prefixes, every bin found."""
        path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
        envs = [os.path.join(root, "bin") for root in (*self.venvs, *self.condas)]
        return list(dict.fromkeys([*path, *PREFIXES, *envs, *self.bins]))

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def walk() -> Survey:
    """Bin folders, virtualenv roots and conda roots below ROOTS, within the limits."""
    survey = Survey()
    started = time.monotonic()
    stack = [(root, root, 0) for root in ROOTS]
    devices = {root: _device(root) for root in ROOTS}
    while stack:
        folder, root, depth = stack.pop()
        survey.dirs += 1
        if survey.dirs > MAX_DIRS or time.monotonic() - started > WALK_S:
            survey.complete = False
            break
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        names = {e.name for e in entries}
        if "pyvenv.cfg" in names:
            survey.venvs.append(folder)
        if "conda-meta" in names:
            survey.condas.append(folder)
        for entry in entries:
            if (
                not entry.is_dir(follow_symlinks=False)
                or os.path.relpath(entry.path, root) in SKIP
                or _device(entry.path) != devices[root]
            ):
                continue
            if entry.name in ("bin", "Scripts"):
                survey.bins.append(entry.path)
            if entry.name not in PRUNE_NAMES and depth + 1 < MAX_DEPTH:
                stack.append((entry.path, root, depth + 1))
    survey.seconds = round(time.monotonic() - started, 2)
    for found in (survey.bins, survey.venvs, survey.condas):
        found.sort()
    return survey


def _device(path: str) -> int:
    try:
        return os.stat(path, follow_symlinks=False).st_dev
    except OSError:
        return -1


def _has_python_entry_point(path: str) -> bool:
    """An ELF file carrying CPython's (or PyPy's) entry point in its first _SCAN_BYTES."""
    try:
        with open(path, "rb") as handle:
            if handle.read(4) != b"\x7fELF":
                return False
            head = handle.read(_SCAN_BYTES - 4)
    except OSError:
        return False
    return any(mark in head for mark in _ENTRY_POINTS)


def candidates(folders: list[str]) -> list[str]:
    """Executable files in `folders` that may be Pythons, by name or by entry point. Each
    real file is read once, however many names lead to it: where /bin links to /usr/bin
    (every merged-/usr image) that halves the reading, most of the survey's time."""
    found: dict[str, None] = {}
    scanned: dict[str, bool] = {}  # real path -> carries a Python entry point
    for folder in dict.fromkeys(folders):
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            real = os.path.realpath(entry.path)
            if not (os.path.isfile(real) and os.access(real, os.X_OK)):
                continue
            if _NAME_RE.match(entry.name) is None:
                if real not in scanned:
                    scanned[real] = _has_python_entry_point(real)
                if not scanned[real]:
                    continue
            found[entry.path] = None
    return list(found)


def ask(path: str) -> dict[str, object] | None:
    """What the interpreter at `path` says it is; None if it is not a Python."""
    try:
        out = subprocess.run(
            [path, "-I", "-B", "-c", ASK], capture_output=True, text=True, timeout=20, check=False
        )
        name, version, real, prefix = json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError, TypeError):
        return None
    return {"implementation": name, "version": version, "real_path": real, "prefix": prefix}


def interpreters(survey: Survey) -> dict[str, Any]:
    """Every distinct (real executable, prefix) and every path that starts it."""
    found: dict[tuple[str, str], dict[str, object]] = {}
    names: dict[tuple[str, str], list[str]] = {}
    started, complete = time.monotonic(), survey.complete
    paths = candidates(survey.folders())
    if len(paths) > MAX_CANDIDATES:
        paths, complete = paths[:MAX_CANDIDATES], False
    # Two paths to one executable in one folder start the same interpreter with the same
    # prefix (a venv's pyvenv.cfg is looked for beside the path and one folder up, the
    # rest from the real executable): asked once (python3, python3.11 in /usr/bin).
    asked: dict[tuple[str, str], dict[str, object] | None] = {}
    for path in paths:
        same = (os.path.realpath(path), os.path.dirname(path))
        if same not in asked:
            if time.monotonic() - started > ASK_S:
                complete = False
                break
            asked[same] = ask(path)
        facts = asked[same]
        if facts is None:
            continue
        key = (str(facts["real_path"]), str(facts["prefix"]))
        found.setdefault(key, facts)
        names.setdefault(key, []).append(path)
    return {
        "found": [{**facts, "names": names[key]} for key, facts in found.items()],
        "complete": complete,
    }


def conda(survey: Survey) -> dict[str, Any]:
    """Conda roots and environments, conda-like tools, and conda blocks in start-up files."""
    places = [{"path": p, "why": "conda-meta folder"} for p in survey.condas]
    for folder in survey.folders():
        for tool in CONDA_TOOLS:
            path = os.path.join(folder, tool)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                places.append({"path": path, "why": f"{tool} executable"})
    for path in _startup_files():
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read(1 << 20)
        except OSError:
            continue
        marker = next((m for m in _CONDA_INIT if m in text), None)
        if marker:
            places.append({"path": path, "why": f"shell start-up mentions {marker!r}"})
    if os.environ.get("CONDA_PREFIX"):
        places.append({"path": os.environ["CONDA_PREFIX"], "why": "CONDA_PREFIX is set"})
    return {"found": bool(places), "places": places, "complete": survey.complete}


def _startup_files() -> list[str]:
    files = list(STARTUP_FILES)
    for folder in ("/etc/profile.d",):
        if os.path.isdir(folder):
            files += sorted(os.path.join(folder, f) for f in os.listdir(folder))
    homes = ["/root"]
    if os.path.isdir("/home"):
        homes += [os.path.join("/home", h) for h in sorted(os.listdir("/home"))]
    for home in homes:
        files += [
            os.path.join(home, f)
            for f in (".bashrc", ".profile", ".bash_profile", ".zshrc", ".config/fish/config.fish")
        ]
    return files
