"""Image labels describe the build, never the build host: no host path, no credential."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from build_graph.stages.build_act import labels, source_label
from tests.helpers import MINIMAL, write_manifest

SOURCE = "org.opencontainers.image.source"


@pytest.mark.parametrize(
    ("remote", "label"),
    [
        ("https://github.com/team/stack.git", "https://github.com/team/stack.git"),
        (
            "https://gitlab-ci-token:TOKEN@gitlab.example/team/stack.git",
            "https://gitlab.example/team/stack.git",
        ),
        ("ssh://git@host:2222/team/stack.git", "ssh://host:2222/team/stack.git"),
        ("git@github.com:team/stack.git", "git@github.com:team/stack.git"),
        ("", ""),
        ("/srv/git/stack.git", ""),
        ("../stack.git", ""),
        ("file:///home/me/stack.git", ""),
        ("https:///home/me/stack.git", ""),
        ("user:TOKEN@host:team/stack.git", ""),  # scp syntax has no password: not a remote
    ],
)
def test_the_source_label_is_a_network_remote_or_nothing(remote: str, label: str) -> None:
    assert source_label(remote) == label


@pytest.mark.parametrize("remote", [None, "/srv/git/stack.git"])
def test_no_label_carries_a_host_path(tmp_path: Path, remote: str | None) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    if remote is not None:
        subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", remote], check=True)
    stack = load(write_manifest(tmp_path, MINIMAL))
    found = labels(stack, plan(stack)[0])
    assert SOURCE not in found
    assert not [v for v in found.values() if str(tmp_path) in v or "/srv/" in v]
