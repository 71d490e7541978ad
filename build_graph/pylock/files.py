"""A tier's Python lock on disk: `<manifest>.pylock/<tier>[@variant].<os>-<arch>.toml`.

One file per tier, variant and platform, beside the manifest (NAME.toml's locks in
NAME.pylock/, so two stacks in one folder never share them). Each holds every distribution
the tier installs from the index: name, exact version, and the wheel that platform and
Python install (file name and sha256); and the inputs it was resolved from (request.py),
so a lock that no longer answers images.toml is known as stale. The layout follows PEP 751's
pylock.toml (`[[packages]]` with `wheels` and their `hashes`) without its index URLs: where
a wheel is downloaded from is the build host's setting (a mirror, a proxy), not the image's.

Builds install `name==version --hash=sha256:...` lines (`pip install --require-hashes
--no-deps`): no resolution at build time, and a file whose bytes differ is refused.
Generated: `python -m build_graph lock` and a run write it; read at the door, every problem
a ConfigError naming the file and key.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from build_graph.errors import ConfigError, ConfigIssue
from build_graph.fs import read_toml, write_if_changed
from build_graph.layout import manifest_option

FORMAT = "build-graph python lock 1"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_WHEEL = re.compile(r"^[A-Za-z0-9_.+!-]+\.whl$")


@dataclass(frozen=True)
class Pin:
    name: str  # canonical (PEP 503)
    version: str
    # (file name, sha256) of each wheel of this version the platform and Python install
    # (usually one; two where a project uploads manylinux2010 and manylinux2014 builds)
    wheels: tuple[tuple[str, str], ...]

    def line(self) -> str:
        """The requirements-file line a build installs."""
        hashes = " ".join(f"--hash=sha256:{sha}" for _, sha in self.wheels)
        return f"{self.name}=={self.version} {hashes}"


@dataclass(frozen=True)
class PythonLock:
    key: str
    platform: str
    inputs: tuple[str, ...]
    pins: tuple[Pin, ...]  # sorted by name

    def lines(self) -> list[str]:
        return [p.line() for p in self.pins]

    def versions(self) -> dict[str, str]:
        return {p.name: p.version for p in self.pins}

    @property
    def digest(self) -> str:
        """sha256 of the lines a build installs: the lock an image was built from."""
        return hashlib.sha256("\n".join(self.lines()).encode()).hexdigest()


def lock_dir(manifest: Path) -> Path:
    return manifest.with_suffix(".pylock")


def lock_file(manifest: Path, key_without_platform: str, platform: str) -> Path:
    return lock_dir(manifest) / f"{key_without_platform}.{platform.replace('/', '-')}.toml"


def fix(manifest: Path, tier: str) -> str:
    where = manifest_option(manifest)
    return f"run `python -m build_graph lock --update {tier}{where}` to resolve it again"


def read(path: Path, tier: str, manifest: Path) -> PythonLock | None:
    """The lock in `path`; None when there is none. Raises ConfigError (exit 2) naming the
    file and the entry for anything that is not a lock this tool wrote."""
    data = read_toml(path, fix(manifest, tier))
    if data is None:
        return None
    issues: list[ConfigIssue] = []

    def bad(key: str, message: str) -> None:
        issues.append(ConfigIssue(path, key, f"{message}; {fix(manifest, tier)}"))

    own = data.get("tool", {}).get("build-graph", {}) if isinstance(data.get("tool"), dict) else {}
    if not isinstance(own, dict) or own.get("format") != FORMAT:
        bad("tool.build-graph.format", f"missing or not {FORMAT!r}")
        raise ConfigError(issues)
    inputs = own.get("inputs")
    if not isinstance(inputs, list) or not all(isinstance(i, str) for i in inputs):
        bad("tool.build-graph.inputs", "must be a list of strings")
        inputs = []
    pins: list[Pin] = []
    packages = data.get("packages", [])
    if not isinstance(packages, list):
        bad("packages", "must be an array of tables")
        packages = []
    for index, entry in enumerate(packages):
        pin = _pin(entry)
        if isinstance(pin, str):
            bad(f"packages[{index}]", pin)
        else:
            pins.append(pin)
    names = [p.name for p in pins]
    for name in sorted({n for n in names if names.count(n) > 1}):
        bad("packages", f"{name} is locked twice")
    if issues:
        raise ConfigError(issues)
    return PythonLock(
        str(own.get("tier", "")),
        str(own.get("platform", "")),
        tuple(inputs),
        tuple(sorted(pins, key=lambda p: p.name)),
    )


def _pin(entry: object) -> Pin | str:
    """A Pin, or what is wrong with the entry."""
    from packaging.utils import canonicalize_name  # a lock read at planning, never a no-op
    from packaging.version import InvalidVersion, Version

    if not isinstance(entry, dict):
        return "must be a table"
    name, version, wheels = entry.get("name"), entry.get("version"), entry.get("wheels")
    if not isinstance(name, str) or canonicalize_name(name) != name:
        return f"name {name!r} is not a canonical distribution name"
    try:
        Version(str(version))
    except InvalidVersion:
        return f"{name}: version {version!r} is not a version"
    if not isinstance(wheels, list) or not wheels:
        return f"{name}: must name the platform's wheels"
    found = []
    for wheel in wheels:
        if not isinstance(wheel, dict):
            return f"{name}: a wheel must be a table"
        file, sha = wheel.get("name"), (wheel.get("hashes") or {}).get("sha256")
        if not isinstance(file, str) or not _WHEEL.match(file):
            return f"{name}: wheel name {file!r} is not a wheel file name"
        if not isinstance(sha, str) or not _SHA256.match(sha):
            return f"{name}: the sha256 of {file} ({sha!r}) is not 64 lower-case hex digits"
        found.append((file, sha))
    return Pin(name, str(version), tuple(found))


def write(path: Path, lock: PythonLock, python: str) -> None:
    out = [
        f"# Generated by build_graph: the Python packages of {lock.key} ({lock.platform}),",
        "# resolved by uv. Move pins with `python -m build_graph lock --update TIER [PACKAGE]`;",
        "# commit this file.",
        'lock-version = "1.0"',
        'created-by = "build-graph"',
        f"requires-python = {json.dumps(f'=={python}.*')}",
        "",
    ]
    for pin in lock.pins:
        wheels = [
            f"  {{ name = {json.dumps(file)}, hashes = {{ sha256 = {json.dumps(sha)} }} }},"
            for file, sha in pin.wheels
        ]
        out += [
            "[[packages]]",
            f"name = {json.dumps(pin.name)}",
            f"version = {json.dumps(pin.version)}",
            "wheels = [",
            *wheels,
            "]",
            "",
        ]
    out += [
        "[tool.build-graph]",
        f"format = {json.dumps(FORMAT)}",
        f"tier = {json.dumps(lock.key)}",
        f"platform = {json.dumps(lock.platform)}",
        "inputs = [",
        *(f"  {json.dumps(i)}," for i in lock.inputs),
        "]",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_if_changed(path, "\n".join(out) + "\n")
