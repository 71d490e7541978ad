"""The unpacked size read from one inspect of a containerd-store image: the platform image
asked for, never an attestation or another platform; an answer of another shape is no
size, never a crash."""

from __future__ import annotations

from typing import Any

import pytest

from build_graph.docker import daemon
from build_graph.errors import BuildFailed


def entry(kind: str, platform: dict[str, str], unpacked: object) -> dict[str, Any]:
    return {"Kind": kind, "ImageData": {"Platform": platform, "Size": {"Unpacked": unpacked}}}


AMD64 = {"os": "linux", "architecture": "amd64"}
ARM64 = {"os": "linux", "architecture": "arm64"}
ATTESTATION = {"os": "unknown", "architecture": "unknown"}


@pytest.fixture(autouse=True)
def containerd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon, "containerd_store", lambda: True)


def test_the_platform_image_asked_for_is_the_one_measured() -> None:
    attrs = {
        "Manifests": [
            entry("attestation", ATTESTATION, 1),
            entry("image", ARM64, 200),
            entry("image", AMD64, 300),
        ]
    }
    assert daemon._unpacked(attrs, "linux/amd64") == 300
    assert daemon._unpacked(attrs, "linux/arm64") == 200
    assert daemon._unpacked(attrs, "linux/riscv64") is None


@pytest.mark.parametrize(
    "manifests",
    [
        None,
        "not a list",
        ["not an entry", 7, None],
        [{"Kind": "image", "ImageData": "not a table"}],
        [{"Kind": "image", "ImageData": {"Platform": AMD64, "Size": 300}}],
        [entry("image", AMD64, "300")],
    ],
)
def test_an_answer_of_another_shape_is_no_size(manifests: object) -> None:
    assert daemon._unpacked({"Manifests": manifests}, "linux/amd64") is None


def test_the_classic_store_s_own_size_is_the_unpacked_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(daemon, "containerd_store", lambda: False)
    assert daemon._unpacked({"Size": 1234, "Manifests": [entry("image", AMD64, 1)]}, "x") == 1234
    assert daemon._unpacked({}, "linux/amd64") is None


class _Images:
    def __init__(self, attrs: dict[str, Any]) -> None:
        self.attrs = attrs

    def get(self, ref: str) -> _Images:
        return self


class _Client:
    def __init__(self, attrs: dict[str, Any]) -> None:
        self.images = _Images(attrs)


@pytest.mark.parametrize("image_id", [None, 7, "", "not-a-digest"])
def test_an_answer_without_an_image_id_is_an_error_never_a_shared_key(
    monkeypatch: pytest.MonkeyPatch, image_id: object
) -> None:
    """The id keys the root image's kept listing: 'None' for every such image would share
    one listing."""
    monkeypatch.setattr(daemon, "containerd_store", lambda: False)
    monkeypatch.setattr(daemon, "client", lambda: _Client({"Id": image_id, "Os": "linux"}))
    with pytest.raises(BuildFailed, match="named no image id"):
        daemon.local_image("team/base:1")
    ident = "sha256:" + "a" * 64
    good = {"Id": ident, "Os": "linux", "Architecture": "amd64", "Size": 9}
    monkeypatch.setattr(daemon, "client", lambda: _Client(good))
    assert daemon.local_image("team/base:1") == daemon.LocalImage(ident, "linux/amd64", 9)
