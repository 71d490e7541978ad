"""Settings of the build host (not of the stack): how builds reach the package index.

BUILD_GRAPH_PIP_INDEX_URL, BUILD_GRAPH_PIP_EXTRA_INDEX_URL and BUILD_GRAPH_PIP_TRUSTED_HOST
become the build args PIP_INDEX_URL, ... that every rendered Dockerfile declares without a
default. Like Docker's proxy args they describe where packages come from, not what the
image contains, so they are not part of any content hash.
"""

from __future__ import annotations

import os

SITE_ARGS = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST")


def build_args() -> dict[str, str]:
    return {name: os.environ[f"BUILD_GRAPH_{name}"] for name in SITE_ARGS
            if os.environ.get(f"BUILD_GRAPH_{name}")}
