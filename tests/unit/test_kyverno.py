"""`ci --kyverno` and images.toml's [signing]: the ClusterPolicy as Kyverno reads it (YAML),
and every key reference checked before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from build_graph.cli import main as cli
from build_graph.manifest.load import load
from build_graph.oci.attestation import VERIFY_PREDICATE
from build_graph.plan.plan import plan
from build_graph.signing.keys import generate
from build_graph.verify.request import trusted_fingerprints
from tests.helpers import MINIMAL, config_errors, load_text, write_manifest

KMS = "gcpkms://projects/p/locations/global/keyRings/r/cryptoKeys/k/cryptoKeyVersions/1"


def policy(tmp_path: Path, signing: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    manifest = write_manifest(tmp_path, MINIMAL + signing)
    assert cli.main(["ci", "--kyverno", "--manifest", str(manifest)]) == 0
    document = yaml.safe_load(capsys.readouterr().out)
    assert isinstance(document, dict)
    return document


def test_the_policy_admits_only_signed_passing_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, pub = generate(tmp_path / "keys")
    document = policy(
        tmp_path, f'\n[signing]\npublic_keys = ["keys/verify.pub", "{KMS}"]\n', capsys
    )
    assert document["kind"] == "ClusterPolicy" and document["apiVersion"] == "kyverno.io/v1"
    [rule] = document["spec"]["rules"]  # type: ignore[index]
    [verify] = rule["verifyImages"]
    assert verify["imageReferences"] == ["127.0.0.1:5000/demo/base:*", "127.0.0.1:5000/demo/base@*"]
    assert verify["mutateDigest"] is True and verify["required"] is True
    [attestation] = verify["attestations"]
    assert attestation["type"] == VERIFY_PREDICATE
    [attestors] = attestation["attestors"]
    assert attestors["count"] == 1
    files, kms = attestors["entries"]
    assert files["keys"]["publicKeys"] == pub.read_text().strip()
    assert kms["keys"]["kms"] == KMS
    for entry in (files, kms):
        assert entry["keys"]["rekor"] == {"ignoreTlog": True}
    [tier] = plan(load(tmp_path / "images.toml"))
    assert attestation["conditions"] == [
        {
            "all": [
                {"key": "{{ passed }}", "operator": "Equals", "value": True},
                {
                    "key": "{{ fingerprint }}",
                    "operator": "AnyIn",
                    "value": trusted_fingerprints(tier.expect, False),
                },
            ]
        }
    ]


def test_no_policy_without_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = write_manifest(tmp_path, MINIMAL)
    assert cli.main(["ci", "--kyverno", "--manifest", str(manifest)]) == 2
    assert "signing.public_keys" in capsys.readouterr().err


def test_a_ci_engine_s_option_is_refused_for_kyverno(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = write_manifest(tmp_path, MINIMAL)
    code = cli.main(["ci", "--kyverno", "--login-secret", "X", "--manifest", str(manifest)])
    assert code == 2 and "--login-secret" in capsys.readouterr().err


def test_signing_keys_are_checked_where_they_are_named(tmp_path: Path) -> None:
    errors = config_errors(tmp_path, MINIMAL + '\n[signing]\npublic_keys = ["nope.pub"]\n')
    assert any("signing.public_keys[0]" in e and "nope.pub" in e for e in errors), errors
    errors = config_errors(tmp_path, MINIMAL + "\n[signing]\nrequired = true\n")
    assert any("signing.required" in e and "names no key" in e for e in errors), errors
    errors = config_errors(tmp_path, MINIMAL + '\n[signing]\nkeys = "x"\n')
    assert any("signing.keys" in e for e in errors), errors


def test_references_resolve_beside_the_manifest(tmp_path: Path) -> None:
    generate(tmp_path / "keys")
    stack = load_text(
        tmp_path,
        MINIMAL
        + f'\n[signing]\nkey = "keys/verify.key"\npublic_keys = ["keys/verify.pub", "{KMS}"]\n',
    )
    assert stack.signing.key == str((tmp_path / "keys" / "verify.key").resolve())
    assert stack.signing.public_keys == (str((tmp_path / "keys" / "verify.pub").resolve()), KMS)
    assert stack.signing.required is False
