"""A registry with the OCI 1.1 referrers API, and reports signed by a Cloud KMS key.

The registry is distribution 2.8 behind a loopback proxy that answers as a registry with the
referrers API does (lying_proxy.py's `referrers_api`): our artifacts must then be listed by
the registry alone (no referrers tag written), and `oras discover` and cosign find them
through the API. The signing key is a KMS key version served by a stand-in for Cloud KMS
(fake_kms.py) through the real KMS client library; cosign verifies with its public key, and
a KMS that answers damaged signatures fails verify in one line, storing nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from build_graph.oci.digest import Digest
from build_graph.oci.refs import Answer, Ref, artifact_tag, parse_ref
from build_graph.registry import api, artifacts, referrers
from build_graph.signing.kms import ENDPOINT_ENV
from build_graph.signing.policy import SIGNING_KEY_ENV
from tests.helpers import REPO
from tests.integration.fake_kms import KEY_VERSION, Kms, fake_kms
from tests.integration.lying_proxy import Lies, lying_proxy
from tests.integration.test_signed_reports import cosign_verify, discovered, gate
from tests.support.registry import Registry
from tests.support.workspace import Workspace

pytestmark = pytest.mark.integration

KEY = f"gcpkms://{KEY_VERSION}"
STACK = f"""\
[stack]
name = "api"
registry = "{{registry}}/api"

[versions]
python = "3.11"

[signing]
public_keys = ["{KEY}"]
required = true

[tiers.app]
from = "debian:bookworm-slim"
template = "python-runtime.Dockerfile.j2"
description = "one tier, its report signed in KMS and listed by the referrers API"
"""


@pytest.fixture(scope="module")
def kms() -> Iterator[tuple[str, Kms]]:
    with fake_kms() as served:
        yield served


@pytest.fixture(scope="module")
def proxied(registry: Registry) -> Iterator[tuple[str, Lies]]:
    with lying_proxy(registry.address) as (address, lies):
        lies.referrers_api = True
        yield address, lies


@pytest.fixture(scope="module")
def ws(
    tmp_path_factory: pytest.TempPathFactory,
    registry: Registry,
    proxied: tuple[str, Lies],
    kms: tuple[str, Kms],
) -> Workspace:
    root = tmp_path_factory.mktemp("api") / "stack"
    root.mkdir()
    (root / "images.toml").write_text(STACK.format(registry=proxied[0]))
    (root / "images.lock").write_bytes((REPO / "examples/quickstart/images.lock").read_bytes())
    return Workspace(root, registry)


def env(kms: tuple[str, Kms]) -> dict[str, str]:
    return {SIGNING_KEY_ENV: KEY, ENDPOINT_ENV: kms[0]}


def test_a_kms_that_answers_damaged_signatures_stores_no_report(
    ws: Workspace, kms: tuple[str, Kms], registry: Registry
) -> None:
    kms[1].faults = {"sig-crc"}
    try:
        result = ws.doit("verify:app", env=env(kms))
    finally:
        kms[1].faults = set()
    said = result.stdout + result.stderr
    assert result.returncode != 0 and "arrived damaged" in said, said[-2000:]
    assert not [t for t in registry.tags("api/app") if ".verify-" in t]


def test_the_registry_lists_our_artifacts_itself(
    ws: Workspace, kms: tuple[str, Kms], proxied: tuple[str, Lies], registry: Registry
) -> None:
    result = ws.doit(env=env(kms))
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert kms[1].signed >= 1
    digest = registry.digest("api/app", "latest")
    assert digest
    listed = proxied[1].referrers[("api/app", digest)]
    types = sorted(str(entry["artifactType"]) for entry in listed.values())
    assert types == [
        "application/vnd.cyclonedx+json",
        "application/vnd.dev.sigstore.bundle.v0.3+json",
    ]
    # The API took the subject: no referrers tag is kept beside it.
    assert f"sha256-{digest.removeprefix('sha256:')}" not in registry.tags("api/app")
    ref = f"{proxied[0]}/api/app@{digest}"
    before = len(proxied[1].requests)
    assert sorted(discovered(ref)) == types
    assert ("GET", f"/v2/api/app/referrers/{digest}") in proxied[1].requests[before:]


def test_cosign_verifies_the_kms_signature(
    ws: Workspace, kms: tuple[str, Kms], proxied: tuple[str, Lies], tmp_path: Path
) -> None:
    public = tmp_path / "kms.pub"
    public.write_text(kms[1].public_pem(KEY_VERSION))
    digest = ws.registry.digest("api/app", "latest")
    result = cosign_verify(f"{proxied[0]}/api/app@{digest}", public)
    assert result.returncode == 0, result.stderr
    [line] = [x for x in result.stdout.splitlines() if x.startswith("{")]
    assert json.loads(line)["payloadType"] == "application/vnd.in-toto+json"


def test_the_gate_reads_the_kms_key_named_in_images_toml(
    ws: Workspace, kms: tuple[str, Kms], proxied: tuple[str, Lies], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENDPOINT_ENV, kms[0])
    passed = gate(ws, f"{proxied[0]}/api/app:latest")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert f"signed with {KEY}" in passed.stdout


def empty_image(image: Ref) -> tuple[Answer, Digest]:
    """An image with no layers pushed as `image` (what the artifacts are about): the
    registry's answer for it, and its digest."""
    config = api.put_blob(image, b"{}")
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": str(config),
            "size": 2,
        },
        "layers": [],
    }
    api.put_manifest(
        image, json.dumps(manifest).encode(), "application/vnd.oci.image.manifest.v1+json"
    )
    subject = api.head_manifest(image)
    assert subject.digest is not None
    return subject, subject.digest


def test_writers_racing_on_one_referrers_tag_lose_no_entry(registry: Registry) -> None:
    """Runners publishing about one digest at once, on a registry without the API: every
    artifact ends up listed (each writer reads its update back and writes again if another
    writer's replaced it)."""
    image = parse_ref(f"{registry.address}/race/app:v1")
    subject, digest = empty_image(image)

    def publish(n: int) -> Digest:
        payload = json.dumps({"writer": n}).encode()
        return artifacts.publish(image, subject, f"w{n}", "application/vnd.test+json", payload, {})[
            1
        ]

    with ThreadPoolExecutor(max_workers=6) as pool:
        written = set(pool.map(publish, range(6)))
    listed = {r.digest for r in referrers.listed(image, digest)}
    assert written == listed, (written, listed)


def test_runners_remaking_one_artifact_at_once_all_finish_and_the_tag_is_listed(
    registry: Registry,
) -> None:
    """Runners publishing the same artifact (one tag: a report made again) about one digest
    at once: each replaces and deletes the one it found, so a writer's own entry can vanish
    under it. Every writer finishes (none writes a deleted entry back until it runs out of
    rounds: the racing-runners failure of a loaded CI) and the artifact the tag names is
    listed. (A replaced one can stay listed after its deletion, where a writer's list was
    read before the deleter's removal: not checked here.)"""
    image = parse_ref(f"{registry.address}/remade/app:v1")
    subject, digest = empty_image(image)

    for made in range(3):  # each time new reports (a verify made again says when)

        def publish(n: int, made: int = made) -> Digest:
            payload = json.dumps({"writer": n, "made": made}).encode()
            return artifacts.publish(
                image, subject, "report", "application/vnd.test+json", payload, {}
            )[1]

        with ThreadPoolExecutor(max_workers=6) as pool:
            list(pool.map(publish, range(6)))  # raises what any writer raised
        tagged = api.head_manifest(image.at(artifact_tag(digest, "report")))
        listed = {r.digest for r in referrers.listed(image, digest)}
        assert tagged.digest in listed, (tagged.digest, listed)
