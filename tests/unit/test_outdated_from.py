"""`outdated`'s `from` lines against a tag registry on loopback, and the shape rule alone."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from build_graph.cli.main import main
from build_graph.errors import UntrustedAnswer
from build_graph.oci.refs import parse_ref
from build_graph.oci.tags import filled, newer_tags, newer_values, shape_of
from build_graph.registry import tags as registry_tags
from build_graph.registry.auth import credentials
from tests.helpers import write_manifest
from tests.pypi_index import allow_loopback
from tests.registry_tags import TagRegistry, serving

# Docker Hub's nvidia/cuda tag list, trimmed (its shapes, 2026-11), in no order; plus
# hostile entries that must be left out, not proposed.
CUDA = [
    "12.9.1-cudnn-devel-ubuntu22.04",
    "12.4.1-cudnn-runtime-ubuntu22.04",
    "13.0.2-cudnn-devel-ubuntu24.04",
    "12.4.1-cudnn-devel-ubuntu22.04",
    "13.1.0-cudnn-devel-rockylinux9",
    "12.4.1-cudnn-devel-ubuntu20.04",
    "13.0.2-cudnn-devel-ubuntu22.04",
    "12.10.0-cudnn8-devel-ubuntu22.04",
    "14.0.0-cudnn-devel-ubuntu22.04-rc",
    "12.6.3-cudnn-devel-ubuntu22.04",
    "99.0.0-cudnn-devel-ubuntu22.04\x1b[2J",
    "-99.0.0-cudnn-devel-ubuntu22.04",
    "9" * 200,
    99,
    "12.4.1-base-ubuntu22.04",
    "12.8.1-cudnn-devel-ubuntu24.04",
]
DEBIAN = [
    "12.8-slim",
    "bookworm-slim",
    "12.11-slim",
    "12.7-slim",
    "13.1-slim",
    "12.11",
    "13.1-slim-amd64",
]
STACK = """
[stack]
name = "demo"
registry = "127.0.0.1:5000/demo"

[versions]
python = "3.10"
cuda = "12.4.1"
ubuntu = "22.04"

[tiers.builder]
from = "{host}/nvidia/cuda:{{cuda}}-cudnn-devel-ubuntu{{ubuntu}}"
template = "python-runtime.Dockerfile.j2"

[tiers.slim]
from = "{host}/library/debian:12.7-slim"
template = "python-runtime.Dockerfile.j2"

[variants.jammy]

[variants.focal.versions]
ubuntu = "20.04"
"""


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[TagRegistry]:
    allow_loopback(monkeypatch)
    with serving(TagRegistry({"nvidia/cuda": CUDA, "library/debian": DEBIAN})) as served:
        yield served


def outdated(tmp_path: Path, host: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    path = write_manifest(tmp_path, STACK.format(host=host))
    assert main(["outdated", "--manifest", str(path)]) == 0
    return capsys.readouterr().out.splitlines()


def test_newer_tags_of_the_same_shape_are_proposed_as_the_edit_of_their_version(
    tmp_path: Path, registry: TagRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    host = registry.host
    cuda, debian = f"from {host}/nvidia/cuda:", f"from {host}/library/debian:12.7-slim"
    assert outdated(tmp_path, host, capsys) == [
        "variant jammy:",
        f"  {cuda}12.4.1-cudnn-devel-ubuntu22.04 -> 13.0.2-cudnn-devel-ubuntu22.04: "
        'edit versions.cuda = "13.0.2"',
        f"  {cuda}12.4.1-cudnn-devel-ubuntu22.04 -> 12.9.1-cudnn-devel-ubuntu22.04: "
        'edit versions.cuda = "12.9.1" (the newest 12.x)',
        f"  {debian}: newer tags exist: 13.1-slim, 12.11-slim, 12.8-slim",
        "variant focal:",
        f"  {cuda}12.4.1-cudnn-devel-ubuntu20.04 -> 12.4.1-cudnn-devel-ubuntu22.04: "
        'edit variants.focal.versions.ubuntu = "22.04"',
        f"  {debian}: newer tags exist: 13.1-slim, 12.11-slim, 12.8-slim",
    ]
    # each repository asked once for both variants, every page followed (4 tags a page)
    assert sum("nvidia/cuda" in path for path, _ in registry.requests) == 4
    assert sum("library/debian" in path for path, _ in registry.requests) == 2


def test_a_registry_that_cannot_be_asked_is_one_line_and_the_rest_goes_on(
    tmp_path: Path, registry: TagRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as free:  # a loopback port nothing listens on
        free.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{free.getsockname()[1]}"
    path = write_manifest(
        tmp_path, STACK.format(host=closed).replace(f"{closed}/library", f"{registry.host}/library")
    )
    assert main(["outdated", "--manifest", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith(
        f"  from {closed}/nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04: "
        f"could not ask: cannot ask the registry {closed}"
    )
    assert out[2].endswith("newer tags exist: 13.1-slim, 12.11-slim, 12.8-slim")


def test_a_registry_that_refuses_is_named_with_its_status(
    tmp_path: Path, registry: TagRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    registry.status = 403
    out = outdated(tmp_path, registry.host, capsys)
    assert f"could not ask: the registry {registry.host} answered HTTP 403" in out[1]
    assert len(out) == 6 and all("could not ask" in line for line in out if "from" in line)


def test_a_repository_the_registry_lacks_is_said_not_called_up_to_date(
    tmp_path: Path, registry: TagRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    del registry.repositories["library/debian"]
    out = outdated(tmp_path, registry.host, capsys)
    assert out[3] == (
        f"  from {registry.host}/library/debian:12.7-slim: its registry lists "
        "no tags of library/debian"
    )


def test_no_from_tags_asks_no_registry(
    tmp_path: Path, registry: TagRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_manifest(tmp_path, STACK.format(host=registry.host))
    assert main(["outdated", "--no-from-tags", "--manifest", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == ["variant jammy:", "variant focal:"]
    assert registry.requests == []


def test_the_anonymous_token_dance_is_followed_as_on_docker_hub(
    tmp_path: Path, registry: TagRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))  # no `docker login` here
    credentials.cache_clear()
    registry.token = "anonymous-pull"
    listed = registry_tags.read_tags(parse_ref(f"{registry.host}/library/debian:x"))
    assert sorted(listed.tags) == sorted(DEBIAN)
    asked = [(path.partition("?")[0], auth) for path, auth in registry.requests]
    assert asked[:3] == [
        ("/v2/library/debian/tags/list", ""),
        ("/token", ""),
        ("/v2/library/debian/tags/list", "Bearer anonymous-pull"),
    ]
    assert "scope=repository%3Alibrary%2Fdebian%3Apull" in registry.requests[1][0]


def test_a_tag_list_past_its_bounds_is_refused_whole(
    registry: TagRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = parse_ref(f"{registry.host}/nvidia/cuda:x")
    with pytest.raises(UntrustedAnswer, match="more than 3 pages"):
        registry_tags.read_tags(ref, max_pages=3)
    monkeypatch.setattr(registry_tags, "MAX_PAGE_BYTES", 100)
    with pytest.raises(UntrustedAnswer, match="more than 100 bytes"):
        registry_tags.read_tags(ref)
    listed = registry_tags.read_tags(parse_ref(f"{registry.host}/library/debian:x"))
    assert listed.malformed == 0 and len(listed.tags) == len(DEBIAN)


def test_only_the_digits_a_field_put_there_move() -> None:
    image, owners = filled(
        "nvidia/cuda:{cuda}-devel-ubuntu{ubuntu}",
        {"cuda": "12.4.1", "ubuntu": "22.04", "python": "3.10"},
    )
    tag = image.partition(":")[2]
    shape = shape_of(tag, owners[len(image) - len(tag) :], {"cuda"})  # ubuntu: not editable
    tags = ["12.4.10-devel-ubuntu22.04", "13.0.0-devel-ubuntu24.04", "12.4.9-devel-ubuntu22.04"]
    assert shape.fields == ["cuda"]
    assert [n.value for n in newer_values(shape, "cuda", "12.4.1", tags)] == ["12.4.10", "12.4.9"]
    assert newer_tags(shape, tags) == [
        "13.0.0-devel-ubuntu24.04",
        "12.4.10-devel-ubuntu22.04",
        "12.4.9-devel-ubuntu22.04",
    ]
