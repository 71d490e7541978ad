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
  docker/cli-plugins (cli-plugins/manager); and, to be safe, where patched or older CLIs
  look (the CLI's own folder, lib/ and libexec/docker/cli-plugins under its own prefix, as
  packagers move the system folders, and DOCKER_CLI_PLUGIN_EXTRA_DIRS of early versions);
  config.json's bytes, and the variables that move either (DOCKER_CONFIG, HOME);
- for the API version, DOCKER_API_VERSION (it overrides the CLI's own) and the daemon's
  engine version and API floor (the CLI settles on a version with the daemon).

Only a binary that is what it is named is remembered: an ELF file whose real name is
`docker` (and `docker-buildx` for the plugin), outside /snap. A wrapper script, or an ELF
launcher under another name (Ubuntu's snap links `docker` to `/usr/bin/snap`, which runs
the snap's own CLI and buildx from folders no key here sees; depot links `docker-buildx` to
`depot`), can start a binary elsewhere, so behind one every run asks. Only answers are
kept (a CLI without buildx, or one that failed, is asked again next run); a damaged or
unreadable memory is asked afresh, never trusted.
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
    with suppress(OSError, ValueError, RecursionError):
        found = json.loads(kept.read_text()) if kept.is_file() else None
        if isinstance(found, dict) and found.get("key") == key:
            answer = found.get("answer")
            if isinstance(answer, str) and answer:
                return answer
    answer = ask()
    if answer:
        with suppress(OSError):
            kept.parent.mkdir(parents=True, exist_ok=True)
            write_if_changed(kept, json.dumps({"key": key, "answer": answer}, ensure_ascii=True))
    return answer


def api_key(exe: str, engine: str, min_api: str) -> list[str] | None:
    """What decides the API version `exe` speaks with this daemon; None behind a wrapper,
    and for a daemon that is not Docker Engine (no engine version to tell it by)."""
    binary = _identity(exe, "docker")
    if binary is None or not engine:
        return None
    setting = f"DOCKER_API_VERSION={os.environ.get('DOCKER_API_VERSION', '')}"
    return [binary, setting, engine, min_api]


def buildx_key(exe: str) -> list[str] | None:
    """What decides which buildx `exe buildx` runs, and so what it says; None where one of
    the binaries is not an ELF file (a wrapper) or config.json cannot be read."""
    binary = _identity(exe, "docker")
    if binary is None:
        return None
    try:
        home = Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker")
    except RuntimeError:  # no HOME and no passwd entry: nothing to key on
        return None
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
        except (ValueError, AttributeError, RecursionError):
            return None
        if not isinstance(listed, list) or not all(isinstance(d, str) for d in listed):
            return None
        extra = listed
    env_dirs = [d for d in os.environ.get("DOCKER_CLI_PLUGIN_EXTRA_DIRS", "").split(":") if d]
    dirs = [*extra, *env_dirs, str(home / "cli-plugins"), *_SYSTEM_PLUGIN_DIRS]
    own = os.path.dirname(os.path.realpath(exe))
    prefix = os.path.dirname(own)
    dirs += [own, *(os.path.join(prefix, d, "docker", "cli-plugins") for d in ("lib", "libexec"))]
    plugins = []
    for folder in dict.fromkeys(dirs):
        path = os.path.join(folder, "docker-buildx")
        if not os.path.exists(path):  # a dangling link too: the CLI passes over it
            plugins.append(f"{path} absent")
            continue
        found = _identity(path, "docker-buildx")
        if found is None:
            return None
        plugins.append(f"{path} {found}")
    settings = [f"{name}={os.environ.get(name, '')}" for name in _PLUGIN_ENV]
    return [binary, hashlib.sha256(text).hexdigest(), *settings, *plugins]


def _identity(path: str, name: str) -> str | None:
    """The real file behind `path`, as 'realpath dev ino size mtime ctime'; None when it is
    not an ELF file really named `name` outside /snap (a script or launcher that starts
    another binary), or cannot be read."""
    real = os.path.realpath(path)
    if os.path.basename(real) != name or real.startswith("/snap/"):
        return None
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
    return hashlib.sha256("\n".join(key).encode("utf-8", "surrogatepass")).hexdigest()[:32]
