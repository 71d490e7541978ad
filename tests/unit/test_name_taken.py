"""Two runners of one hash on one daemon: the containerd image store refuses to name an
image twice ('already exists'); the build says so as NameTaken, which the build stage
settles by using the image the other runner named (same hash, same inputs)."""

from __future__ import annotations

import io
import os

import pytest

from build_graph.docker import buildkit
from build_graph.docker.build_request import BuildRequest
from build_graph.errors import BuildFailed, NameTaken

TAG = "127.0.0.1:5000/quickstart/raced:89a384d57f276dff1b5f"


def fake_cli(said: str) -> tuple[str, ...]:
    """A BuildKit CLI that reads the context, prints what BuildKit printed, and fails."""
    return ("sh", "-c", f"cat >/dev/null; printf '%s\\n' '{said}'; exit 1", "sh")


@pytest.fixture(autouse=True)
def no_daemon_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(buildkit, "cli_env", lambda: dict(os.environ))


def build(said: str) -> None:
    request = BuildRequest(
        context=io.BytesIO(b"tar"), tag=TAG, name="raced", buildargs={}, secrets={}
    )
    buildkit.build(fake_cli(said), request)


def test_a_name_the_store_already_holds_is_name_taken() -> None:
    said = f'ERROR: failed to solve: image "{TAG}": already exists'
    with pytest.raises(NameTaken, match="another build on this daemon named it first"):
        build(said)


def test_another_image_s_name_or_another_failure_is_a_plain_build_failure() -> None:
    for said in ('ERROR: image "127.0.0.1:5000/other:1": already exists', "ERROR: no space"):
        with pytest.raises(BuildFailed) as caught:
            build(said)
        assert not isinstance(caught.value, NameTaken)
