"""What a docker CLI says about itself, remembered on this machine: the API version it
speaks and its buildx plugin's version (docker/buildkit.py asks both before a run builds).

Asking starts a Go binary each time (here 77 ms for `docker version`, 157 ms for `docker
buildx version`, on every run that builds); what decides the answers can be looked at for
far less, so an answer is kept under a key made of it and used again only while all of it
is unchanged:

- the CLI binary itself (its real path, device, inode, size, mtime and ctime);
- for buildx, every `docker-buildx` the CLI could run, present or not: docker/cli looks in
  config.json's `cliPluginsExtraDirs`, then `$DOCKER_CONFIG/cli-plugins` (~/.docker without
  it), then /usr/local/lib, /usr/local/libexec, /usr/lib and /usr/libexec's
  docker/cli-plugins (cli-plugins/manager); the CLI's own folder too, where some builds
  look; config.json's bytes, and the variables that move either (DOCKER_CONFIG, HOME,
  DOCKER_CLI_PLUGIN_EXTRA_DIRS);
- for the API version, DOCKER_API_VERSION (it overrides the CLI's own) and the daemon's
  engine version and API floor (the CLI settles on a version with the daemon).

Only ELF binaries are remembered: a wrapper script can start a binary elsewhere that no key
here would see, so behind one every run asks. Only answers are kept (a CLI without buildx,
or one that could not say, is asked again next run); a damaged or unreadable memory is
asked afresh, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from build_graph import layout
from build_graph.fs import write_if_changed

_KEPT = "docker-cli"
_SYSTEM_PLUGIN_DIRS = (
    "/usr/local/lib/docker/cli-plugins",
    "/usr/local/libexec/docker/cli-plugins",
    "/usr/lib/docker/cli-plugins",
    "/usr/libexec/docker/cli-plugins",
)
_PLUGIN_ENV = ("DOCKER_CONFIG", "HOME", "DOCKER_CLI_PLUGIN_EXTRA_DIRS")


def remembered(what: str, key: list[str] | None, ask: Callable[[], str | None]) -> str | None:
    """The answer kept under `what` and `key`, else `ask()`'s, kept when there is one.
    `key` None: nothing here can be relied on, so `ask()` every time."""
    if key is None:
        return ask()
    kept = layout.machine_cache(_KEPT) / f"{what}-{_digest(key)}"
    with suppress(OSError, ValueError):
        found = json.loads(kept.read_text())
        if isinstance(found, dict) and found.get("key") == key:
            answer = found.get("answer")
            if isinstance(answer, str) and answer:
                return answer
    answer = ask()
    if answer:
        with suppress(OSError):
            kept.parent.mkdir(parents=True, exist_ok=True)
            write_if_changed(kept, json.dumps({"key": key, "answer": answer}))
    return answer


def api_key(exe: str, engine: str, min_api: str) -> list[str] | None:
    """What decides the API version `exe` speaks with this daemon; None behind a wrapper,
    and for a daemon that is not Docker Engine (no engine version to tell it by)."""
    binary = _identity(exe)
    if binary is None or not engine:
        return None
    setting = f"DOCKER_API_VERSION={os.environ.get('DOCKER_API_VERSION', '')}"
    return [binary, setting, engine, min_api]


def buildx_key(exe: str) -> list[str] | None:
    """What decides which buildx `exe buildx` runs, and so what it says; None where one of
    the binaries is not an ELF file (a wrapper) or config.json cannot be read."""
    binary = _identity(exe)
    if binary is None:
        return None
    home = Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker")
    config = home / "config.json"
    try:
        text = config.read_bytes()
    except FileNotFoundError:
        text, extra = b"", []
    except OSError:
        return None
    else:
        try:
            listed = json.loads(text).get("cliPluginsExtraDirs") or []
        except (ValueError, AttributeError):
            return None
        if not isinstance(listed, list) or not all(isinstance(d, str) for d in listed):
            return None
        extra = listed
    env_dirs = [d for d in os.environ.get("DOCKER_CLI_PLUGIN_EXTRA_DIRS", "").split(":") if d]
    dirs = [*extra, *env_dirs, str(home / "cli-plugins"), *_SYSTEM_PLUGIN_DIRS]
    dirs.append(os.path.dirname(os.path.realpath(exe)))
    plugins = []
    for folder in dict.fromkeys(dirs):
        path = os.path.join(folder, "docker-buildx")
        if not os.path.lexists(path):
            plugins.append(f"{path} absent")
            continue
        found = _identity(path)
        if found is None:
            return None
        plugins.append(f"{path} {found}")
    settings = [f"{name}={os.environ.get(name, '')}" for name in _PLUGIN_ENV]
    return [binary, hashlib.sha256(text).hexdigest(), *settings, *plugins]


def _identity(path: str) -> str | None:
    """The real file behind `path`, as 'realpath dev ino size mtime ctime'; None when it is
    not an ELF file (a script that starts another binary) or cannot be read."""
    real = os.path.realpath(path)
    try:
        with open(real, "rb") as handle:
            if handle.read(4) != b"\x7fELF":
                return None
            found = os.fstat(handle.fileno())
    except OSError:
        return None
    return (
        f"{real} {found.st_dev} {found.st_ino} {found.st_size} "
        f"{found.st_mtime_ns} {found.st_ctime_ns}"
    )


def _digest(key: list[str]) -> str:
    return hashlib.sha256("\n".join(key).encode()).hexdigest()[:32]
