"""The door to the registry, as pure logic: digests parsed, loopback parsed, where credentials
may go, and errors in words that name the registry. Hostile values first."""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
from pathlib import Path

import pytest

from build_graph.errors import UntrustedAnswer
from build_graph.oci import problems
from build_graph.oci.digest import Digest, maybe_digest, parse_digest
from build_graph.oci.hosts import (
    INSECURE_ENV,
    TLS_ENV,
    is_loopback,
    may_send_credentials,
    plain_http,
)
from build_graph.oci.refs import parse_ref
from build_graph.registry import auth as registry_auth
from build_graph.registry.transport import check_hop

HEX = "ab" * 32


def test_a_sha256_digest_parses_and_names_itself_safely() -> None:
    digest = parse_digest(f"sha256:{HEX}")
    assert str(digest) == f"sha256:{HEX}" and digest.dashed == f"sha256-{HEX}"
    assert str(Digest.of(b"")) == (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("sha256:../../x", "not a sha256 digest"),
        ("sha256:../../../../etc/passwd", "not a sha256 digest"),
        (f"sha256:{HEX}/../x", "not a sha256 digest"),
        (f"sha256:{HEX}\n", "not a sha256 digest"),
        (f"sha256:{HEX.upper()}", "not a sha256 digest"),
        (f"sha256:{HEX[:-1]}", "not a sha256 digest"),
        (f"sha256:{HEX}0", "not a sha256 digest"),
        (f"sha512:{HEX}{HEX}", "a sha512 digest; only sha256"),
        (HEX, "not a digest"),
        ("", "not a digest"),
        ("../sha256:x", "not a digest"),
        (f"SHA256:{HEX}", "not a digest"),
        (None, "must be a string"),
        (["sha256:x"], "must be a string"),
    ],
)
def test_hostile_digests_are_refused_with_a_reason(value: object, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_digest(value)
    assert maybe_digest(value) is None


def test_a_digest_cannot_be_made_around_the_parser() -> None:
    with pytest.raises(ValueError):
        Digest("../../x")


def test_a_huge_hostile_value_is_not_echoed_whole() -> None:
    with pytest.raises(ValueError) as caught:
        parse_digest("sha256:" + "x" * 100_000)
    assert len(str(caught.value)) < 300


def test_a_reference_by_a_hostile_digest_is_refused() -> None:
    with pytest.raises(ValueError, match="not a sha256 digest"):
        parse_ref("127.0.0.1:5000/a@sha256:../../x")


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("localhost:5000", True),
        ("LOCALHOST:5000", True),
        ("127.0.0.1:5000", True),
        ("127.0.0.2:5000", True),
        ("127.255.255.254", True),
        ("[::1]:5000", True),
        ("[::1]", True),
        ("[::ffff:127.0.0.1]:5000", True),
        ("localhost.evil.com", False),
        ("localhost.evil.com:5000", False),
        ("127.example.com", False),
        ("127.0.0.1.nip.io:5000", False),
        ("evil.com/127.0.0.1", False),
        ("user@127.0.0.1", False),
        ("128.0.0.1:5000", False),
        ("0.0.0.0:5000", False),
        ("[::2]:5000", False),
        ("127.0.0.1:port", False),
        ("", False),
    ],
)
def test_loopback_is_parsed_not_prefix_matched(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    assert plain_http(host) is loopback


def test_listed_insecure_registries_get_plain_http_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(INSECURE_ENV, " reg.lan:5000 , other.lan")
    assert plain_http("reg.lan:5000") and plain_http("other.lan")
    assert not plain_http("reg.lan:5001") and not plain_http("reg.lan")
    assert not plain_http("evil.reg.lan:5000")


def test_a_loopback_registry_listed_for_tls_gets_https_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TLS_ENV, "127.0.0.1:5443, localhost:8443")
    assert not plain_http("127.0.0.1:5443") and not plain_http("localhost:8443")
    assert plain_http("127.0.0.1:5000") and plain_http("localhost:5443")


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://auth.docker.io/token", True),
        ("https://ghcr.io/token?x=1", True),
        ("http://127.0.0.1:5001/token", True),
        ("http://[::1]:5001/token", True),
        ("http://localhost/token", True),
        ("http://auth.example.com/token", False),
        ("http://localhost.evil.com/token", False),
        ("http://127.example.com/token", False),
        ("http://127.0.0.1@evil.com/token", False),
        ("ftp://127.0.0.1/token", False),
        ("/token", False),
        ("https:///token", False),
    ],
)
def test_credentials_go_only_over_https_or_to_loopback(url: str, allowed: bool) -> None:
    assert may_send_credentials(url) is allowed


@pytest.mark.parametrize(
    ("exc", "words"),
    [
        (ConnectionRefusedError(111, "Connection refused"), "nothing answers there"),
        (TimeoutError("timed out"), "did not answer in time"),
        (socket.gaierror(-2, "Name or service not known"), "does not resolve"),
        (http.client.RemoteDisconnected("closed"), "closed the connection"),
        (http.client.BadStatusLine("xx"), "not valid HTTP"),
        (ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number"), "TLS"),
    ],
)
def test_causes_are_words_not_class_names(exc: BaseException, words: str) -> None:
    text = str(problems.unreachable("reg.example:443", exc))
    assert "reg.example:443" in text and words in text
    assert type(exc).__name__ not in text


def test_a_loopback_registry_that_does_not_answer_says_start_it() -> None:
    text = str(problems.unreachable("127.0.0.1:5000", ConnectionRefusedError()))
    assert text.startswith("cannot ask the registry 127.0.0.1:5000: nothing answers there")
    assert "scripts/services.sh up" in text


def test_a_remote_registry_that_does_not_answer_is_not_told_to_start_services() -> None:
    text = str(problems.unreachable("reg.example", ConnectionRefusedError()))
    assert "services.sh" not in text and "reg.example" in text


def test_a_plain_http_registry_spoken_to_over_tls_is_called_a_tls_problem() -> None:
    exc = ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number")
    text = str(problems.unreachable("reg.lan:5000", exc))
    assert "TLS" in text and INSECURE_ENV in text


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_advise_docker_login(status: int) -> None:
    text = str(problems.refused("ghcr.io", "a question about ghcr.io/a:b", status))
    assert "the registry ghcr.io answered HTTP" in text and "`docker login ghcr.io`" in text


def test_a_5xx_is_the_registry_failing_and_its_words_are_made_printable() -> None:
    text = str(problems.refused("127.0.0.1:5000", "x", 503, b"down\x1b[2J\r\nnow"))
    assert "HTTP 503" in text and "see 127.0.0.1:5000's logs" in text
    assert "\x1b" not in text and "\n" not in text


def test_a_plain_http_registry_elsewhere_gets_no_credentials_whatever_realm_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anyone on a plain-HTTP path can write the 401 and name an HTTPS realm of theirs."""
    host = "10.0.0.5:5000"
    secret = base64.b64encode(b"alice:hunter2").decode()
    (tmp_path / "config.json").write_text(json.dumps({"auths": {host: {"auth": secret}}}))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    monkeypatch.setenv(INSECURE_ENV, host)
    registry_auth.credentials.cache_clear()
    sent: list[dict[str, str]] = []

    def token_service(url: str, headers: dict[str, str]) -> tuple[int, bytes]:
        sent.append(headers)
        return 200, b'{"token": "t"}'

    challenge = registry_auth.parse_challenge('Bearer realm="https://attacker.example/token"')
    try:
        registry_auth.Tokens().bearer(host, challenge, "repository:a:pull", token_service)
    finally:
        registry_auth.credentials.cache_clear()
    assert sent == [{}]  # asked anonymously: no Authorization header


def test_a_tag_beside_a_digest_is_not_part_of_the_repository() -> None:
    ref = parse_ref(f"127.0.0.1:5000/team/debian:bookworm@sha256:{HEX}")
    assert (ref.host, ref.repository, ref.reference) == (
        "127.0.0.1:5000",
        "team/debian",
        f"sha256:{HEX}",
    )
    assert parse_ref(f"debian:bookworm@sha256:{HEX}").repository == "library/debian"


def test_a_certificate_the_daemon_refuses_is_said_as_such_not_as_a_registry_down() -> None:
    said = (
        'failed to fetch oauth token: Post "https://127.0.0.1:39841/token": tls: failed to '
        "verify certificate: x509: certificate signed by unknown authority"
    )
    advice = problems.hint("127.0.0.1:5000", said)
    assert "does not trust a certificate" in advice and "certs.d/127.0.0.1:5000" in advice
    assert "is it running" in problems.hint("127.0.0.1:5000", "connection refused")


@pytest.mark.parametrize(
    ("current", "target", "refused"),
    [
        ("https://gcr.example/v2/a/blobs/x", "https://storage.example/b?sig=1", None),
        ("https://127.0.0.1:5443/v2/a/blobs/x", "http://127.0.0.1:9000/b", None),
        ("http://127.0.0.1:5000/v2/a/blobs/x", "http://localhost:9000/b", None),
        ("https://gcr.example/v2/a/blobs/x", "http://storage.example/b", "from HTTPS to plain"),
        ("https://gcr.example/v2/a/blobs/x", "file:///etc/passwd", "no HTTP URL"),
        ("https://gcr.example/v2/a/blobs/x", "https:///nohost", "no HTTP URL"),
        ("https://gcr.example/v2/a/blobs/x", "https://127.0.0.1:8080/x", "this machine"),
        (
            "https://gcr.example/v2/a/blobs/x",
            "https://169.254.169.254/computeMetadata",
            "link-local",
        ),
        ("https://gcr.example/v2/a/blobs/x", "https://[fe80::1]/x", "link-local"),
    ],
)
def test_a_redirect_leads_only_where_a_registry_may_send_us(
    current: str, target: str, refused: str | None
) -> None:
    if refused is None:
        assert check_hop(current, target) == target
    else:
        with pytest.raises(UntrustedAnswer, match=refused):
            check_hop(current, target)
