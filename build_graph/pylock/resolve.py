"""Resolve a tier's Python packages with uv, for the image's Python and platform.

uv (a PyPI wheel holding one binary) resolves for another Python and platform without
building anything: `uv pip compile --python-version --python-platform --only-binary :all:
--format pylock.toml` names, per package, the one wheel that platform installs and its
sha256. The index is the one builds use (BUILD_GRAPH_PIP_INDEX_URL, extra indexes, trusted
hosts, the host's CA bundle); nothing of the user's own uv configuration takes part (its
UV_* settings and uv.toml could point elsewhere). The previous lock is uv's preference:
re-resolving moves only what must move, or the packages named to upgrade.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.utils import canonicalize_name

from build_graph import settings
from build_graph.errors import BuildFailed, IndexUnreachable, Unresolvable
from build_graph.pylock.files import Pin, PythonLock
from build_graph.pylock.request import Request

TIMEOUT_S = 600


def uv_binary() -> str:
    try:
        from uv import find_uv_bin
    except ImportError:  # pragma: no cover - a dependency of this package
        raise BuildFailed(
            "uv is not installed: `pip install uv` (a dependency of build-graph)"
        ) from None
    return str(find_uv_bin())


def resolve(request: Request, previous: PythonLock | None, upgrade: bool | list[str]) -> list[Pin]:
    """The pins of `request`: what the tier installs itself (its ancestors' and what is
    provided left out). `upgrade`: True moves every pin to the newest allowed, a list moves
    those packages; otherwise the previous pins stay where they still satisfy."""
    with tempfile.TemporaryDirectory(prefix="build-graph-lock-") as tmp:
        folder = Path(tmp)
        (folder / "requirements.in").write_text("".join(f"{r}\n" for r in request.requirements))
        pinned = [*request.constraints, *request.provided]
        (folder / "constraints.txt").write_text("".join(f"{n}=={v}\n" for n, v in pinned))
        (folder / "uv.toml").write_text(_config(request))
        out = folder / "pylock.tier.toml"  # uv reads it first: the previous pins are preferred
        if previous is not None:
            out.write_text(_preferences(previous))
        args = [
            uv_binary(),
            "pip",
            "compile",
            "requirements.in",
            "--constraints",
            "constraints.txt",
            "--config-file",
            "uv.toml",
            "--python-version",
            request.python,
            "--python-platform",
            request.uv_platform,
            "--only-binary",
            ":all:",
            "--format",
            "pylock.toml",
            "--no-header",
            "--quiet",
            "--output-file",
            out.name,
        ]
        if upgrade is True:
            args.append("--upgrade")
        elif upgrade:
            for name in upgrade:
                args += ["--upgrade-package", name]
        try:
            done = subprocess.run(
                args, cwd=folder, env=_env(), capture_output=True, text=True, timeout=TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            raise IndexUnreachable(
                f"{request.key}: resolving its Python packages took over {TIMEOUT_S} s"
            ) from None
        if done.returncode != 0:
            raise _failure(request, done.stderr)
        data = tomllib.loads(out.read_text(encoding="utf-8"))
    skip = {canonicalize_name(n) for n, _ in pinned}
    return sorted(
        (
            _pin(request, p)
            for p in data.get("packages", [])
            if canonicalize_name(p["name"]) not in skip
        ),
        key=lambda p: p.name,
    )


def _pin(request: Request, package: dict[str, Any]) -> Pin:
    name = canonicalize_name(str(package["name"]))
    wheels = package.get("wheels")
    if not isinstance(wheels, list) or not wheels:
        raise BuildFailed(f"{request.key}: uv named no wheel of {name} for {request.platform}")
    hashes = [
        (w.get("hashes") or {}).get("sha256") if isinstance(w, dict) else None for w in wheels
    ]
    if not all(isinstance(h, str) and h for h in hashes):
        raise BuildFailed(
            f"{request.key}: the index gave no sha256 for a wheel of {name}: a lock needs "
            "each file's hash (builds install with --require-hashes); use an index that "
            "publishes them (PEP 503 #sha256= links or PEP 691 JSON)"
        )
    return Pin(
        name,
        str(package["version"]),
        tuple((_file(w), str(h)) for w, h in zip(wheels, hashes, strict=True)),
    )


def _file(wheel: dict[str, Any]) -> str:
    """The wheel's file name, from the URL (or path) uv names it by."""
    return PurePosixPath(unquote(urlsplit(str(wheel.get("url") or wheel.get("path"))).path)).name


def _config(request: Request) -> str:
    """uv.toml: what is provided has no dependencies of its own (it is installed already)."""
    return "".join(
        f"[[dependency-metadata]]\nname = {json.dumps(n)}\nversion = {json.dumps(v)}\n"
        "requires-dist = []\n\n"
        for n, v in request.provided
    )


def _preferences(previous: PythonLock) -> str:
    body = "".join(
        f"[[packages]]\nname = {json.dumps(p.name)}\nversion = {json.dumps(p.version)}\n\n"
        for p in previous.pins
    )
    return f'lock-version = "1.0"\ncreated-by = "uv"\n\n{body}'


def _env() -> dict[str, str]:
    """uv's environment: the user's UV_* settings left out (the builds' index decides), the
    index URLs as variables, not arguments (a credential in a URL would otherwise be in
    every local user's `ps`), and the host's CA."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_") or k == "UV_CACHE_DIR"}
    env["UV_NO_PROGRESS"] = "1"
    pip = settings.pip_settings()
    env["UV_INDEX_URL"] = settings.index_url(settings.DEFAULT_INDEX)
    if extra := pip.get("PIP_EXTRA_INDEX_URL", "").split():
        env["UV_EXTRA_INDEX_URL"] = " ".join(extra)
    if hosts := pip.get("PIP_TRUSTED_HOST", "").split():
        env["UV_INSECURE_HOST"] = " ".join(hosts)
    ca = settings.host_ca()
    if ca is not None:
        env["SSL_CERT_FILE"] = str(ca)
    return env


def _failure(request: Request, stderr: str) -> Exception:
    said = settings.redact_text(stderr.strip())[-2000:] or "(uv said nothing)"
    if "No solution found" in stderr or "unsatisfiable" in stderr:
        return Unresolvable(
            f"{request.key}: no set of Python packages satisfies its requirements for "
            f"Python {request.python} on {request.platform}:\n{said}\n"
            f"fix tiers.{request.tier}.packages in images.toml, or, where it conflicts with "
            "what a parent tier locked, pin that package in the parent's packages (a parent "
            "is locked first and never moved by a child)"
        )
    return IndexUnreachable(f"{request.key}: resolving its Python packages failed:\n{said}")
