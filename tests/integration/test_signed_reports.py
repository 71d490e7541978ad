"""Signed verify reports that standard tools find and check (issue 30), read by Debian's
cosign and oras as a platform team would, and attacked as someone with push rights would.

The quickstart is built with `[signing] required = true` and a key from `keygen`: cosign
verifies every promoted tier's report offline with the public key; oras lists the report and
the SBOM on distribution 2.8 (no referrers API: the referrers tag is kept). Then a forged
passing report is pushed for an unverified digest, three ways (unsigned, another key's, a
genuine signature over an altered Statement): the gate refuses each naming why, cosign
refuses, a runner without the key does not skip verify, and `latest` does not move.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from build_graph.oci.attestation import VERIFY_PREDICATE
from build_graph.oci.refs import parse_ref
from build_graph.registry import api, artifacts
from build_graph.signing import dsse, keys
from build_graph.signing.policy import SIGNING_KEY_ENV, STATEMENT_TYPE
from tests.helpers import REPO
from tests.support.registry import Registry
from tests.support.workspace import Workspace, make_workspace

pytestmark = pytest.mark.integration

TIERS = ("builder", "fastext", "base", "training", "runner")
SIGNING = '\n[signing]\npublic_keys = ["keys/verify.pub"]\nrequired = true\n'


def tool(name: str) -> str:
    """cosign, oras: installed by scripts/services.sh up (Debian's packages); a test that
    cannot run them fails, it is never skipped."""
    found = shutil.which(name)
    assert found, f"{name} is not on PATH: run scripts/services.sh up (it installs it)"
    return found


def run(*command: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TUF_ROOT": "/nonexistent"}  # nothing from outside: keys only
    result = subprocess.run(
        command, capture_output=True, text=True, check=False, timeout=300, cwd=cwd, env=env
    )
    print(command, result.returncode, result.stdout[-3000:], result.stderr[-3000:])
    return result


def cosign_verify(ref: str, public: Path) -> subprocess.CompletedProcess[str]:
    return run(
        tool("cosign"),
        "verify-attestation",
        "--key",
        str(public),
        "--insecure-ignore-tlog",
        "--type",
        VERIFY_PREDICATE,
        "--allow-http-registry",
        "--allow-insecure-registry",
        ref,
    )


def discovered(ref: str) -> list[str]:
    """The artifact types `oras discover` lists for `ref`."""
    result = run(tool("oras"), "discover", "--plain-http", "--format", "json", ref)
    assert result.returncode == 0, result.stderr
    return [r["artifactType"] for r in json.loads(result.stdout).get("referrers", [])]


def gate(ws: Workspace, ref: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return run(
        sys.executable, "-m", "build_graph", "gate", "--manifest", str(ws.manifest), ref, *extra
    )


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory, registry: Registry) -> Iterator[Workspace]:
    ws = make_workspace(tmp_path_factory.mktemp("signed"), registry)
    keys.generate(ws.root / "keys")
    ws.manifest.write_text(ws.manifest.read_text() + SIGNING)
    result = ws.doit(env={SIGNING_KEY_ENV: str(ws.root / "keys" / "verify.key")})
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    yield ws


def image(ws: Workspace, tier: str, tag: str = "latest") -> str:
    digest = ws.registry.digest(f"quickstart/{tier}", tag)
    assert digest, f"quickstart/{tier}:{tag} is not in the registry"
    return f"{ws.registry.address}/quickstart/{tier}@{digest}"


def statements(result: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    """The Statements cosign printed as verified (one DSSE envelope per line)."""
    return [
        json.loads(base64.b64decode(json.loads(line)["payload"]))
        for line in result.stdout.splitlines()
        if line.startswith("{")
    ]


def test_cosign_verifies_every_promoted_tier_offline(signed: Workspace) -> None:
    public = signed.root / "keys" / "verify.pub"
    for tier in TIERS:
        ref = image(signed, tier)
        result = cosign_verify(ref, public)
        assert result.returncode == 0, result.stderr
        assert "verified against the specified public key" in result.stderr
        [stated] = statements(result)
        predicate = stated["predicate"]
        assert isinstance(predicate, dict) and predicate["passed"] is True
        assert predicate["digest"] == ref.split("@")[1]


def test_oras_lists_the_report_and_the_sbom_on_a_registry_without_the_api(
    signed: Workspace,
) -> None:
    for tier in TIERS:
        ref = image(signed, tier)
        digest = parse_ref(ref).reference
        found = discovered(ref)
        assert dsse.BUNDLE_TYPE in found and "application/vnd.cyclonedx+json" in found, found
        # distribution 2.8 has no referrers API: the list is the referrers tag we keep
        assert f"sha256-{digest.split(':')[1]}" in signed.registry.tags(f"quickstart/{tier}")


def test_cosign_s_older_layout_alone_verifies_too(signed: Workspace) -> None:
    """What Kyverno's ClusterPolicy reads: the `.att` image, copied by crane with the image
    into a repository that holds nothing else (no referrers, no bundle)."""
    source = image(signed, "runner")
    digest = source.split("@")[1]
    copy = f"{signed.registry.address}/copies/runner"
    att = f"sha256-{digest.removeprefix('sha256:')}.att"
    for ref, to in (
        (source, f"{copy}@{digest}"),
        (f"{source.split('@')[0]}:{att}", f"{copy}:{att}"),
    ):
        assert run(tool("crane"), "copy", "--insecure", ref, to).returncode == 0
    assert signed.registry.tags("copies/runner") == [att]
    result = cosign_verify(f"{copy}@{digest}", signed.root / "keys" / "verify.pub")
    assert result.returncode == 0, result.stderr
    [stated] = statements(result)
    assert stated["predicateType"] == VERIFY_PREDICATE


def test_another_key_verifies_nothing(signed: Workspace, tmp_path: Path) -> None:
    _, other = keys.generate(tmp_path / "other")
    ref = image(signed, "runner")
    assert cosign_verify(ref, other).returncode != 0
    refused = gate(signed, ref, "--key", str(other))
    assert refused.returncode == 1, refused.stdout
    assert "verifies with none of signing.public_keys" in refused.stdout


def test_the_gate_passes_latest(signed: Workspace) -> None:
    ref = f"{signed.registry.address}/quickstart/runner:latest"
    for extra in ((), ("--current",)):
        passed = gate(signed, ref, *extra)
        assert passed.returncode == 0, passed.stdout + passed.stderr
        assert passed.stdout.startswith("ok: ") and "signed with" in passed.stdout
    pinned = gate(signed, ref, "--print-ref")
    assert pinned.returncode == 0 and pinned.stderr.startswith("ok: ")
    assert pinned.stdout.strip() == image(signed, "runner")


def hash_tags(ws: Workspace) -> list[str]:
    return [t for t in ws.registry.tags("quickstart/runner") if len(t) == 20]


def forge(ws: Workspace, digest: str, payload: bytes, media_type: str, fingerprint: str) -> None:
    """Push `payload` as the verify report of `digest` in the runner's repository, the way
    anyone with push rights could: under the tag and in the referrers index runners read."""
    ref = parse_ref(f"{ws.registry.address}/quickstart/runner@{digest}")
    artifacts.publish(ref, api.head_manifest(ref), f"verify-{fingerprint}", media_type, payload, {})


def test_a_forged_report_neither_skips_verify_nor_moves_latest(
    signed: Workspace, tmp_path: Path
) -> None:
    ws, public = signed, signed.root / "keys" / "verify.pub"
    before = image(ws, "runner")
    genuine = cosign_verify(before, public)
    [statement] = statements(genuine)
    predicate = statement["predicate"]
    assert isinstance(predicate, dict)
    # An unverified digest: the runner rebuilt from a changed launcher, pushed, not verified.
    launcher = ws.root / "launcher" / "launch.py"
    launcher.write_text(launcher.read_text() + "\n# a change nobody verified\n")
    pushed = ws.doit("push:runner", env={SIGNING_KEY_ENV: ""})
    assert pushed.returncode == 0, pushed.stderr[-2000:]
    digests = {ws.registry.digest("quickstart/runner", t) for t in hash_tags(ws)}
    [unverified] = [d for d in digests if d and d != before.split("@")[1]]
    subject = {"name": f"{ws.registry.address}/quickstart/runner", "digest": {}}
    subject["digest"] = {"sha256": unverified.removeprefix("sha256:")}
    forged = {**statement, "subject": [subject], "predicate": {**predicate, "digest": unverified}}
    body = json.dumps(forged).encode()
    stranger_key, _ = keys.generate(tmp_path / "stranger")
    stranger = keys.load_signer_file(stranger_key)
    bundle = json.loads(genuine.stdout.splitlines()[0])
    # cosign prints the envelope; a bundle around it with the statement altered, same signature
    altered = dsse.bundle(body, base64.b64decode(bundle["signatures"][0]["sig"]), "")
    forgeries = {
        "unsigned": (body, STATEMENT_TYPE, "unsigned, and signing.required is set"),
        "another key": (
            dsse.bundle(body, stranger.sign(dsse.pae(dsse.PAYLOAD_TYPE, body)), ""),
            dsse.BUNDLE_TYPE,
            "verifies with none of signing.public_keys",
        ),
        "altered": (altered, dsse.BUNDLE_TYPE, "verifies with none of signing.public_keys"),
    }
    ref = f"{ws.registry.address}/quickstart/runner@{unverified}"
    unchecked = gate(ws, ref)  # before any forgery: a digest nobody verified
    assert unchecked.returncode == 1 and "no verify report for this digest" in unchecked.stdout
    for name, (payload, media_type, reason) in forgeries.items():
        forge(ws, unverified, payload, media_type, str(predicate["fingerprint"]))
        refused = gate(ws, ref)
        assert refused.returncode == 1 and reason in refused.stdout, (name, refused.stdout)
        assert cosign_verify(ref, public).returncode != 0, name
        # a runner without the key must verify (it cannot: no key), never adopt the forgery
        run_ = ws.doit("promote:runner", env={SIGNING_KEY_ENV: ""})
        assert run_.returncode != 0, name
        assert "this runner has no key to sign verify reports with" in run_.stdout + run_.stderr
        assert image(ws, "runner") == before, f"{name}: latest moved to an unverified digest"
    # Planted: the SBOM tag the coming verify replaces names the image latest names now. What
    # a tag of ours named before is deleted only when it is about the same image: not this.
    runner = parse_ref(before)
    held = api.get_manifest(runner)
    sbom_tag = f"sha256-{unverified.removeprefix('sha256:')}.sbom"
    api.put_manifest(runner.at(sbom_tag), held.body, held.media_type)
    # With the key, verify runs for real and replaces the forgery; latest moves.
    result = ws.doit(env={SIGNING_KEY_ENV: str(ws.root / "keys" / "verify.key")})
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert image(ws, "runner") == ref
    assert api.head_manifest(runner).digest == held.digest, "the planted tag deleted an image"
    assert cosign_verify(ref, public).returncode == 0
    assert gate(ws, f"{ws.registry.address}/quickstart/runner:latest", "--current").returncode == 0
    # The digest latest left: the gate still passes it, but not as the tier's current image.
    stale = gate(ws, before, "--current")
    assert stale.returncode == 1 and "not what runner's inputs make now" in stale.stdout


def test_prune_takes_the_image_s_artifacts_and_no_other_s(signed: Workspace) -> None:
    """Planted by someone with push rights: the doomed image's referrers tag and `.att` tag
    name the kept image's own referrers index and `.att` image. Prune deletes the doomed
    image, its report and its SBOM, and nothing of the kept image (test_prune.py sees an
    unplanted referrers index go with its image)."""
    ws = signed
    runner = parse_ref(f"{ws.registry.address}/quickstart/runner:latest")
    kept = image(ws, "runner").split("@")[1].removeprefix("sha256:")
    tags = ws.registry.tags("quickstart/runner")
    [doomed] = [t for t in tags if re.fullmatch(r"sha256-[0-9a-f]{64}", t) and kept not in t]
    for suffix in ("", ".att"):
        held = api.get_manifest(runner.at(f"sha256-{kept}{suffix}"))
        api.put_manifest(runner.at(f"{doomed}{suffix}"), held.body, held.media_type)
    result = run(
        sys.executable,
        "-m",
        "build_graph",
        "prune",
        "--manifest",
        str(ws.manifest),
        "--keep",
        "0",
        "--older-than",
        "0s",
        "--yes",
        cwd=REPO,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 image(s) deleted" in result.stdout
    left = ws.registry.tags("quickstart/runner")
    doomed_digest = f"sha256:{doomed.removeprefix('sha256-')}"
    assert api.head_manifest(runner.at(doomed_digest)).digest is None  # the image went
    assert not [t for t in left if t.startswith(f"{doomed}.verify-") or t == f"{doomed}.sbom"]
    # everything of the kept image stays, and standard tools still find and check it
    for suffix in ("", ".att", ".sbom"):
        assert f"sha256-{kept}{suffix}" in left, left
    assert cosign_verify(image(ws, "runner"), ws.root / "keys" / "verify.pub").returncode == 0
    found = discovered(image(ws, "runner"))
    assert dsse.BUNDLE_TYPE in found and "application/vnd.cyclonedx+json" in found
