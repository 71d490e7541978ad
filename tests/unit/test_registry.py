"""References, artifact tags and registry credentials, as the Docker CLI reads them."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from build_graph.oci.digest import parse_digest
from build_graph.oci.refs import Ref, artifact_tag, parse_ref
from build_graph.registry import auth as registry_auth

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("ref", "want"),
    [
        ("127.0.0.1:5000/team/base:3f2a", Ref("127.0.0.1:5000", "team/base", "3f2a")),
        ("127.0.0.1:5000/team/base", Ref("127.0.0.1:5000", "team/base", "latest")),
        (f"127.0.0.1:5000/team/base@{DIGEST}", Ref("127.0.0.1:5000", "team/base", DIGEST)),
        ("debian:bookworm-slim", Ref("docker.io", "library/debian", "bookworm-slim")),
        ("nvidia/cuda:13.0.0-devel", Ref("docker.io", "nvidia/cuda", "13.0.0-devel")),
        ("localhost/x:1", Ref("localhost", "x", "1")),
        ("ghcr.io/org/img:v1", Ref("ghcr.io", "org/img", "v1")),
    ],
)
def test_references_read_as_docker_reads_them(ref: str, want: Ref) -> None:
    assert parse_ref(ref) == want


def test_docker_hub_answers_on_its_api_host() -> None:
    assert parse_ref("debian").api_host == "registry-1.docker.io"
    assert parse_ref("127.0.0.1:5000/a").api_host == "127.0.0.1:5000"


@pytest.mark.parametrize("ref", ["127.0.0.1:5000/a@sha256:zz", "127.0.0.1:5000/:tag"])
def test_malformed_references_are_refused(ref: str) -> None:
    with pytest.raises(ValueError, match=r"digest|repository"):
        parse_ref(ref)


def test_artifact_tags_follow_cosigns_scheme_and_fit_a_tag() -> None:
    tag = artifact_tag(parse_digest(DIGEST), "verify-0123456789abcdef0123")
    assert tag == f"sha256-{'ab' * 32}.verify-0123456789abcdef0123"
    assert len(tag) <= 128
    with pytest.raises(ValueError, match="128"):
        artifact_tag(parse_digest(DIGEST), "x" * 60)


def test_bearer_and_basic_challenges_are_parsed() -> None:
    bearer = registry_auth.parse_challenge(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",'
        'scope="repository:library/debian:pull"'
    )
    assert bearer.scheme == "bearer"
    assert bearer.params == {
        "realm": "https://auth.docker.io/token",
        "service": "registry.docker.io",
        "scope": "repository:library/debian:pull",
    }
    assert registry_auth.parse_challenge('Basic realm="Registry"').scheme == "basic"


def write_config(folder: Path, config: dict[str, object]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))


def test_credentials_come_from_docker_login(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    auth = base64.b64encode(b"ci:s3cret:with:colons").decode()
    write_config(
        tmp_path,
        {
            "auths": {
                "registry.example:5000": {"auth": auth},
                "https://index.docker.io/v1/": {"auth": auth},
            }
        },
    )
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    registry_auth.credentials.cache_clear()
    assert registry_auth.credentials("registry.example:5000") == ("ci", "s3cret:with:colons")
    assert registry_auth.credentials("registry-1.docker.io") == ("ci", "s3cret:with:colons")
    assert registry_auth.credentials("other.example") is None
    registry_auth.credentials.cache_clear()


def test_a_credential_helper_is_asked_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    helper = tmp_path / "bin" / "docker-credential-fake"
    helper.parent.mkdir()
    helper.write_text(
        '#!/bin/sh\nread host\necho "{\\"Username\\": \\"oauth2accesstoken\\", '
        '\\"Secret\\": \\"tok-$host\\"}"\n'
    )
    helper.chmod(0o755)
    write_config(
        tmp_path / "cfg",
        {
            "credHelpers": {"europe-docker.pkg.dev": "fake"},
            "auths": {"europe-docker.pkg.dev": {"auth": "eDp5"}},
        },
    )
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "cfg"))
    monkeypatch.setenv("PATH", f"{helper.parent}:/usr/bin:/bin")
    registry_auth.credentials.cache_clear()
    assert registry_auth.credentials("europe-docker.pkg.dev") == (
        "oauth2accesstoken",
        "tok-europe-docker.pkg.dev",
    )
    registry_auth.credentials.cache_clear()
