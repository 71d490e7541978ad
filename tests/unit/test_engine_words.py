"""What the Docker engine and CLI say, read as each release says it (no daemon needed)."""

from __future__ import annotations

import pytest

from build_graph.docker.buildkit import _version
from build_graph.docker.daemon import _STATUS_DIGEST

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("line", "digest"),
    [
        # the containerd image store's only word of the digest (Docker 28.5, seen)
        (
            f"127.0.0.1:5000/quickstart/builder:4fe8e2beee18c2772bc5: digest: {DIGEST} size: 856",
            DIGEST,
        ),
        (f"latest: digest: {DIGEST} size: 1055", DIGEST),
        ("Pushed", None),
        ("Layer already exists", None),
        ("", None),
        (f"x: digest: {DIGEST}", None),  # no size: not that line
    ],
)
def test_the_push_streams_digest_line(line: str, digest: str | None) -> None:
    found = _STATUS_DIGEST.match(line)
    assert (found[1] if found else None) == digest


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("1.44", (1, 44)),
        ("1.51\n", (1, 51)),
        ("1.41", (1, 41)),
        ("", None),
        ("1.x", None),
        ("\u0661.\u0664", None),
        ("1..44", None),
    ],
)
def test_api_versions_compare_as_numbers(text: str, version: tuple[int, ...] | None) -> None:
    assert _version(text) == version
    if version is not None:
        assert (_version("1.9") or ()) < version  # 1.9 is older than 1.41, not newer
