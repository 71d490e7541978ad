"""Settings of the build host (not of the stack): how builds reach the package index.

BUILD_GRAPH_PIP_INDEX_URL, BUILD_GRAPH_PIP_EXTRA_INDEX_URL and BUILD_GRAPH_PIP_TRUSTED_HOST
become the build args PIP_INDEX_URL, ... that every rendered Dockerfile declares without a
default. Like Docker's proxy args they describe where packages come from, not what the
image contains, so they are not part of any content hash.

A build arg is recorded in the image's history and pushed config, so a value carrying
credentials (https://user:TOKEN@host/simple) is never one: with BuildKit every pip setting
then reaches the build as one secret, a pip.conf the templates mount at /etc/pip.conf for
the RUN steps that run pip; without BuildKit such a setting is refused before anything is
built. A credential never reaches an image.

The host's CA bundle (every CA the build host trusts, a TLS-intercepting proxy's included)
reaches every pip step of a build as the secret 'hostca' and the compile container as a
read-only file, with PIP_CERT, SSL_CERT_FILE, ... pointing at it there only: TLS stays
verified behind a proxy, and neither the bundle nor the setting is in a layer or a hash
(a host with a proxy and one without build the same image). BUILD_GRAPH_CA_BUNDLE names
another bundle; `none` sends none.
"""

from __future__ import annotations

import os
import re
import ssl
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from build_graph.errors import BadSiteSetting, CredentialInSetting

SITE_ARGS = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST")
CA_SETTING = "BUILD_GRAPH_CA_BUNDLE"
# Where the tools of a build or compile look for CAs: pip, Python's ssl (urllib, most
# libraries), requests, curl, git. Set for one RUN step or one compile container.
CA_ENV = ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO")
CA_SECRET = "hostca"
_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)([^/@\s]*)@", re.IGNORECASE)
_USERINFO_ANYWHERE = re.compile(_USERINFO.pattern.removeprefix("^"), re.IGNORECASE)
DEFAULT_INDEX = "https://pypi.org/simple"


def host_ca() -> Path | None:
    """The build host's CA bundle: BUILD_GRAPH_CA_BUNDLE when set (`none`: no bundle), else
    the file OpenSSL verifies with here (as Python's ssl finds it: SSL_CERT_FILE, then the
    system's bundle, which holds the CAs of /usr/local/share/ca-certificates too)."""
    named = os.environ.get(CA_SETTING, "")
    if named.lower() == "none":
        return None
    if named:
        if not Path(named).is_file():
            raise BadSiteSetting(
                f"{CA_SETTING}={named}: no such file; name the build host's "
                "CA bundle (a PEM file, e.g. /etc/ssl/certs/ca-certificates"
                ".crt), or `none` to send builds no CA bundle"
            )
        return Path(named)
    found = ssl.get_default_verify_paths()
    for candidate in (found.cafile, found.openssl_cafile):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def pip_settings() -> dict[str, str]:
    """PIP_INDEX_URL, ... as the host sets them (BUILD_GRAPH_PIP_*), credentials and all:
    for the compile container's environment (a container, never an image)."""
    return {
        name: os.environ[f"BUILD_GRAPH_{name}"]
        for name in SITE_ARGS
        if os.environ.get(f"BUILD_GRAPH_{name}")
    }


def credential() -> str | None:
    """The first setting that carries a credential, redacted for messages; None if none."""
    for name, value in pip_settings().items():
        for url in value.split():
            if _USERINFO.match(url):
                return f"BUILD_GRAPH_{name} ({redact(url)})"
    return None


def warnings() -> list[str]:
    """Settings that weaken a build without failing it: said before a run, never silent."""
    trusted = os.environ.get("BUILD_GRAPH_PIP_TRUSTED_HOST", "")
    if not trusted:
        return []
    return [
        f"warning: BUILD_GRAPH_PIP_TRUSTED_HOST={trusted} turns off TLS verification "
        "for pip's downloads from those hosts; the build host's CA bundle reaches builds "
        f"by itself (a proxy's CA included: {CA_SETTING}), so unset it unless that index "
        "really serves plain HTTP or a certificate no CA vouches for"
    ]


def index_url(default: str) -> str:
    """The package index builds use (BUILD_GRAPH_PIP_INDEX_URL, else `default`), checked to
    be an http(s) URL with a host, so a typo is one line naming the setting."""
    url = os.environ.get("BUILD_GRAPH_PIP_INDEX_URL") or default
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        ok = False
    if not ok:
        raise BadSiteSetting(
            f"BUILD_GRAPH_PIP_INDEX_URL={redact(url)[:200]!r} is not an "
            "http(s) URL of a package index; set it like "
            "https://pypi.org/simple, or unset it"
        )
    return url


def named_ca() -> bool:
    """Whether BUILD_GRAPH_CA_BUNDLE names a bundle (not unset, not `none`)."""
    return os.environ.get(CA_SETTING, "").lower() not in ("", "none")


def check(buildkit: bool) -> None:
    """Fail before any build when a credential could only travel as a build arg."""
    found = credential()
    if found is not None and not buildkit:
        raise CredentialInSetting(
            f"{found} carries a credential, and builds here have no BuildKit to pass it as "
            "a secret; as a build arg it would be recorded in the image's history and "
            "pushed config, so it is refused. Install Docker's BuildKit (docker buildx, or "
            "a docker CLI with DOCKER_BUILDKIT support) or use an index URL without "
            "user:password"
        )


def for_build(buildkit: bool) -> tuple[dict[str, str], dict[str, str]]:
    """(build args, secrets) for one build: plain settings as build args; with a credential
    every pip setting as the secret 'pipconf' (a pip.conf) and no build arg at all."""
    check(buildkit)
    settings = pip_settings()
    bundle = host_ca() if buildkit else None  # the classic builder takes no secrets
    secrets = {CA_SECRET: bundle.read_text()} if bundle is not None else {}
    if credential() is None:
        return settings, secrets
    keys = {
        "PIP_INDEX_URL": "index-url",
        "PIP_EXTRA_INDEX_URL": "extra-index-url",
        "PIP_TRUSTED_HOST": "trusted-host",
    }
    lines = ["[global]", *(f"{keys[k]} = {v}" for k, v in settings.items())]
    return {}, {**secrets, "pipconf": "\n".join(lines) + "\n"}


def redact(url: str) -> str:
    """The URL with any user:password replaced by '***' (for messages and labels)."""
    return _USERINFO.sub(lambda m: f"{m[1]}***@", url)


def redact_text(text: str) -> str:
    """Every URL's user:password in `text` (a tool's output) replaced by '***'."""
    return _USERINFO_ANYWHERE.sub(lambda m: f"{m[1]}***@", text)


def without_userinfo(url: str) -> str:
    """'https://ci:TOKEN@host/x.git' -> 'https://host/x.git'; other text unchanged."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    if not parts.scheme or "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
