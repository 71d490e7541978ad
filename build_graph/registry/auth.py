"""Credentials for a registry, as `docker login` left them, and the token dance.

Where credentials come from (the Docker CLI's own order): a credential helper for the host
(`credHelpers`), the default store (`credsStore`), else the base64 `auths` entry of
$DOCKER_CONFIG/config.json (~/.docker/config.json). A registry that answers 401 says how to
authenticate in its WWW-Authenticate header: Basic (send the credentials) or Bearer (trade
them at the realm for a token scoped to the repository and action).
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# Docker Hub's credentials live under this key (the Docker CLI's IndexServer).
_HUB_KEYS = ("https://index.docker.io/v1/", "index.docker.io", "docker.io",
             "registry-1.docker.io")


@dataclass(frozen=True)
class Challenge:
    """A parsed WWW-Authenticate header: the scheme and its parameters."""

    scheme: str
    params: dict[str, str]


def parse_challenge(header: str) -> Challenge:
    """'Bearer realm="https://auth",service="reg",scope="repository:a:pull"' -> Challenge."""
    scheme, _, rest = header.strip().partition(" ")
    params = {key.lower(): value for key, value in
              re.findall(r'([A-Za-z_]+)\s*=\s*"([^"]*)"', rest)}
    return Challenge(scheme.lower(), params)


def _config() -> dict[str, object]:
    folder = Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker")
    try:
        data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _keys(host: str) -> tuple[str, ...]:
    if host in _HUB_KEYS:
        return _HUB_KEYS
    return (host, f"https://{host}", f"http://{host}")


@cache
def credentials(host: str) -> tuple[str, str] | None:
    """(username, secret) for `host`, or None for anonymous access. Asked once per run."""
    config = _config()
    helpers = config.get("credHelpers") or {}
    helper = next((helpers[k] for k in _keys(host) if isinstance(helpers, dict) and k in helpers),
                  config.get("credsStore"))
    if isinstance(helper, str) and helper:
        found = _from_helper(helper, host)
        if found is not None:
            return found
    auths = config.get("auths") or {}
    for key in _keys(host):
        entry = auths.get(key) if isinstance(auths, dict) else None
        if isinstance(entry, dict) and entry.get("auth"):
            try:
                user, _, secret = base64.b64decode(str(entry["auth"])).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                continue
            return user, secret
    return None


def _from_helper(helper: str, host: str) -> tuple[str, str] | None:
    """`docker-credential-<helper> get`, as the Docker CLI runs it; None when it has none."""
    for key in _keys(host):
        try:
            done = subprocess.run([f"docker-credential-{helper}", "get"], input=key,
                                  capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode == 0:
            try:
                data = json.loads(done.stdout)
                return str(data["Username"]), str(data["Secret"])
            except (ValueError, KeyError, TypeError):
                return None
    return None


def basic_header(creds: tuple[str, str]) -> str:
    return "Basic " + base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode()
