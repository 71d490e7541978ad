"""Settings of the build host (not of the stack): how builds reach the package index.

BUILD_GRAPH_PIP_INDEX_URL, BUILD_GRAPH_PIP_EXTRA_INDEX_URL and BUILD_GRAPH_PIP_TRUSTED_HOST
become the build args PIP_INDEX_URL, ... that every rendered Dockerfile declares without a
default. Like Docker's proxy args they describe where packages come from, not what the
image contains, so they are not part of any content hash.

A build arg is recorded in the image's history and pushed config, so a value carrying
credentials (https://user:TOKEN@host/simple) is refused before anything is built: a
credential must never reach an image.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit, urlunsplit

from build_graph.errors import EXIT_CONFIG, BuildGraphError

SITE_ARGS = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST")
_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)([^/@\s]*)@", re.IGNORECASE)


class CredentialInSetting(BuildGraphError):
    exit_code = EXIT_CONFIG


def build_args() -> dict[str, str]:
    """The site's build args; raises CredentialInSetting if one carries a credential."""
    args = {name: os.environ[f"BUILD_GRAPH_{name}"] for name in SITE_ARGS
            if os.environ.get(f"BUILD_GRAPH_{name}")}
    for name, value in args.items():
        for url in value.split():
            if _USERINFO.match(url):
                raise CredentialInSetting(
                    f"BUILD_GRAPH_{name} carries a credential ({redact(url)}); build args are "
                    "recorded in the image's history and pushed config, so it is refused. "
                    "Use an index URL without user:password (a mirror on a trusted network, "
                    "or a proxy that adds the credential)")
    return args


def redact(url: str) -> str:
    """The URL with any user:password replaced by '***' (for messages and labels)."""
    return _USERINFO.sub(lambda m: f"{m[1]}***@", url)


def without_userinfo(url: str) -> str:
    """'https://ci:TOKEN@host/x.git' -> 'https://host/x.git'; other text unchanged."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    if not parts.scheme or "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
