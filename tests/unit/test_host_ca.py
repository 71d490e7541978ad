"""The build host's CA bundle reaches pip steps as a secret, never a layer or a hash (issue 20)."""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path

import pytest

from build_graph import settings
from build_graph.errors import BadSiteSetting
from build_graph.layout import HOST_CA
from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from tests.helpers import REPO
from tests.unit.test_pip_secret import _RUNS_PIP, MANIFESTS, instructions

MOUNT = f"--mount=type=secret,id=hostca,target={HOST_CA}"
GUARD = f"[ ! -f {HOST_CA} ] || export " + " ".join(f"{n}={HOST_CA}" for n in settings.CA_ENV)


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda p: p.parent.name)
def test_every_pip_step_mounts_the_bundle_and_points_pip_at_it(manifest: Path) -> None:
    for tier in plan(load(manifest)):
        for instruction in instructions(tier.dockerfile):
            keyword, _, rest = instruction.partition(" ")
            if keyword != "RUN" or not _RUNS_PIP.search(rest) or "--no-index" in rest:
                continue
            flags = [w for w in shlex.split(rest) if w.startswith("--mount=")]
            assert MOUNT in flags, (tier.key, instruction)
            command = rest.split(" ", len(flags))[-1]
            assert command.startswith(GUARD + " && "), (tier.key, command)


def test_the_bundle_is_a_secret_of_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = tmp_path / "bundle.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    monkeypatch.setenv(settings.CA_SETTING, str(bundle))
    monkeypatch.setenv("BUILD_GRAPH_PIP_INDEX_URL", "https://mirror.example/simple")
    assert settings.for_build(buildkit=True) == (
        {"PIP_INDEX_URL": "https://mirror.example/simple"},
        {"hostca": bundle.read_text()},
    )
    # The classic builder takes no secrets: pip there verifies with the image's own CAs.
    assert settings.for_build(buildkit=False)[1] == {}
    monkeypatch.setenv(settings.CA_SETTING, "none")
    assert settings.for_build(buildkit=True)[1] == {}


def test_by_default_the_bundle_is_the_one_this_host_verifies_with(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(settings.CA_SETTING, raising=False)
    mine = tmp_path / "mine.pem"
    mine.write_text("x")
    monkeypatch.setenv("SSL_CERT_FILE", str(mine))  # what Python's ssl itself would use
    assert settings.host_ca() == mine


def test_a_bundle_that_is_not_there_is_a_keyed_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(settings.CA_SETTING, str(tmp_path / "nope.pem"))
    with pytest.raises(BadSiteSetting) as caught:
        settings.for_build(buildkit=True)
    assert str(caught.value).startswith(
        f"BUILD_GRAPH_CA_BUNDLE={tmp_path / 'nope.pem'}: no "
        "such file; name the build host's CA bundle"
    )
    assert caught.value.exit_code == 2


def test_the_bundle_changes_no_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = tmp_path / "bundle.pem"
    bundle.write_text("x")
    hashes = []
    for value in ("none", str(bundle)):
        monkeypatch.setenv(settings.CA_SETTING, value)
        hashes.append({t.key: t.content_hash for t in plan(load(MANIFESTS[0]))})
    assert hashes[0] == hashes[1]


def test_the_manifests_compile_env_wins_over_the_ca_variables() -> None:
    from build_graph.stages.compile_act import compile_env

    stack = load(REPO / "examples" / "quickstart" / "images.toml")
    [tier] = [t for t in plan(stack) if t.spec.compile is not None]
    assert compile_env(stack, tier, with_ca=True)["SSL_CERT_FILE"] == HOST_CA
    assert "SSL_CERT_FILE" not in compile_env(stack, tier, with_ca=False)
    spec = replace(
        tier.spec,
        compile=replace(
            tier.spec.compile,  # type: ignore[type-var]
            env={"SSL_CERT_FILE": "/etc/team-ca.pem"},
        ),
    )
    env = compile_env(stack, replace(tier, spec=spec), with_ca=True)
    assert env["SSL_CERT_FILE"] == "/etc/team-ca.pem" and env["PIP_CERT"] == HOST_CA


def test_a_leftover_trusted_host_setting_is_said_before_a_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BUILD_GRAPH_PIP_TRUSTED_HOST", raising=False)
    assert settings.warnings() == []
    monkeypatch.setenv("BUILD_GRAPH_PIP_TRUSTED_HOST", "pypi.org files.pythonhosted.org")
    [line] = settings.warnings()
    assert line.startswith(
        "warning: BUILD_GRAPH_PIP_TRUSTED_HOST=pypi.org "
        "files.pythonhosted.org turns off TLS verification"
    )


@pytest.mark.parametrize(
    ("value", "named"), [("", False), ("none", False), ("NONE", False), ("/etc/ssl/x.pem", True)]
)
def test_a_named_bundle_is_told_apart_from_the_default(
    monkeypatch: pytest.MonkeyPatch, value: str, named: bool
) -> None:
    monkeypatch.setenv(settings.CA_SETTING, value)
    assert settings.named_ca() is named
