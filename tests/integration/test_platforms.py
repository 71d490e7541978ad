"""Two platforms, one tag: the quickstart built for linux/amd64 and linux/arm64 (arm64 under
QEMU user emulation, scripts/services.sh arm64), from a two-platform seed image in the
loopback registry. `latest` becomes an index of two verified digests; a fresh runner does
nothing; a defect that only shows on arm64 fails arm64's verify and moves no tag at all."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from build_graph.manifest.load import load
from build_graph.oci import contents
from build_graph.oci.digest import Digest
from build_graph.oci.index import INDEX_TYPES, OCI_MANIFEST
from build_graph.oci.refs import parse_ref
from build_graph.plan.plan import PlannedTier, plan
from build_graph.registry import api
from build_graph.signing.keys import generate
from build_graph.signing.policy import SIGNING_KEY_ENV
from tests.helpers import REPO
from tests.integration.lying_proxy import lying_in_place_of
from tests.support.registry import Registry
from tests.support.workspace import Workspace, built, make_workspace, output_of, pushed

pytestmark = pytest.mark.integration
PLATFORMS = ("linux/amd64", "linux/arm64")
SEED = "127.0.0.1:5000/seed/debian"  # scripts/services.sh arm64: an index of both platforms
TIERS = ("fastext", "base", "training", "runner")


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory, registry: Registry) -> Workspace:
    # The set-up is idempotent: binfmt + qemu-user-static, the arm64 seed, the seed index.
    subprocess.run(
        ["bash", str(REPO / "scripts" / "services.sh"), "arm64"], check=True, timeout=1800
    )
    ws = make_workspace(tmp_path_factory.mktemp("platforms"), registry)
    ws.edit('registry = "', f'platforms = {json.dumps(list(PLATFORMS))}\nregistry = "')
    for _ in range(2):  # the builder's and fastext's
        ws.edit('from = "debian:{debian}-slim"', f'from = "{SEED}:{{debian}}-slim"')
    # One kernel: under emulation each unit costs about 40 s, and one shows the arm64
    # compile as well as two.
    ws.edit('FASTEXT_KERNELS = "2"', 'FASTEXT_KERNELS = "1"')
    ws.manifest.write_text(
        ws.manifest.read_text()
        + ('\n[tiers.runner.verify]\nsmoke = ["python3 /opt/runner/launch.py 1"]\n')
        + '\n[signing]\npublic_keys = ["keys/verify.pub"]\n'
    )
    generate(ws.root / "keys")
    return ws


def planned(ws: Workspace) -> dict[str, PlannedTier]:
    return {p.key: p for p in plan(load(ws.manifest))}


def index_at(registry: Registry, repo: str, tag: str) -> tuple[str, dict[str, Any], str]:
    """(media type, document, digest) of what `tag` names, asked as an index."""
    request = urllib.request.Request(
        f"http://{registry.address}/v2/{repo}/manifests/{tag}",
        headers={"Accept": ", ".join(INDEX_TYPES)},
    )
    with urllib.request.urlopen(request) as response:
        return (
            response.headers["Content-Type"],
            json.loads(response.read()),
            response.headers["Docker-Content-Digest"],
        )


def report(tier: PlannedTier) -> dict[str, Any]:
    data = json.loads(tier.folder.verify_record.read_text())
    assert isinstance(data, dict)
    return data


@pytest.mark.timeout(2700)  # arm64 emulation's set-up and a cold two-platform build
def test_latest_is_an_index_of_every_platforms_verified_image(ws: Workspace) -> None:
    result = ws.doit(timeout=3600, env={SIGNING_KEY_ENV: str(ws.root / "keys" / "verify.key")})
    assert result.returncode == 0, result.stdout[-3000:]
    tiers = planned(ws)
    for name in TIERS:
        media_type, index, _ = index_at(ws.registry, f"quickstart/{name}", "latest")
        assert media_type in INDEX_TYPES
        named = contents.parse(
            json.dumps(index).encode(), media_type, Digest.of(json.dumps(index).encode())
        )
        assert [e.platform for e in named.images] == list(PLATFORMS)
        for entry, platform in zip(named.images, PLATFORMS, strict=True):
            image = tiers[f"{name}/{platform.split('/')[1]}"]
            hash_tag = image.image.rsplit(":", 1)[1]
            pushed_as = ws.registry.digest(f"quickstart/{name}", hash_tag)
            verified = report(image)
            assert verified["passed"] is True and verified["digest"] == pushed_as
            assert verified["platform"] == platform
            # The entry is the platform image the verified digest names: itself (an image
            # manifest, the classic store) or the one image of its index (the containerd
            # store, which pushes each image with its provenance attestation).
            found = api.read_image(parse_ref(image.image).at(str(pushed_as)))
            assert entry.digest == found.image.digest
            checks = {c["name"]: c for c in verified["checks"]}
            assert checks["platform (machine)"]["status"] == "pass"
            assert checks["platform (machine)"]["actual"] == (
                "aarch64" if "arm" in platform else "x86_64"
            )
        # Each attestation kept in `latest` is about one of its entries.
        assert {a.about for a in named.attestations} <= {e.digest for e in named.images}
    # The deploy gate passes `latest`, an index of both platforms' images: each platform's
    # image has its own signed report (about its hash tag's index of one image).
    for extra in ((), ("--current",)):
        gated = subprocess.run(
            [
                sys.executable,
                "-m",
                "build_graph",
                "gate",
                "--manifest",
                str(ws.manifest),
                f"{ws.registry.address}/quickstart/runner:latest",
                *extra,
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert gated.returncode == 0 and gated.stdout.startswith("ok: "), (
            gated.stdout + gated.stderr
        )
    # docker itself picks each platform's image from the index that `latest` names. One
    # daemon holds one image per digest reference: the first pull's references go before
    # the second pull (docker 20.10: "Cannot overwrite digest").
    latest = f"{ws.registry.address}/quickstart/runner:latest"
    index_digest = index_at(ws.registry, "quickstart/runner", "latest")[2]
    for platform, machine in (("linux/arm64", "aarch64"), ("linux/amd64", "x86_64")):
        subprocess.run(
            ["docker", "rmi", latest, latest.replace(":latest", f"@{index_digest}")],
            capture_output=True,
            check=False,
        )
        subprocess.run(
            ["docker", "pull", "-q", "--platform", platform, latest],
            check=True,
            capture_output=True,
        )
        said = output_of(
            latest,
            [
                "python3",
                "-c",
                "import platform, fastext; print(platform.machine(), fastext.__name__)",
            ],
            platform,
        )
        assert said.split() == [machine, "fastext"]
    # each platform's compile had its own cache: the arm64 builder ran the arm64 compile
    arm = tiers["fastext/arm64"].folder.ccache_stats
    assert json.loads(arm.read_text())["stats"] is not None
    assert (ws.root / "build" / "ccache" / "default" / "fastext@linux-arm64").is_dir()


def test_a_fresh_runner_does_nothing(ws: Workspace) -> None:
    shutil.rmtree(ws.root / "build")
    result = ws.doit()
    assert result.returncode == 0, result.stdout[-3000:]
    assert built(result) == [] and pushed(result) == []
    assert "compiling in" not in result.stdout and "] verified " not in result.stdout
    assert "manifest copied" not in result.stdout and "an index of" not in result.stdout


@pytest.mark.timeout(1800)  # the runner rebuilt and verified for both platforms
def test_an_arm64_only_defect_fails_arm64_alone_and_moves_no_tag(ws: Workspace) -> None:
    before = {t: index_at(ws.registry, f"quickstart/{t}", "latest")[2] for t in TIERS}
    launcher = ws.root / "launcher" / "launch.py"
    launcher.write_text(
        launcher.read_text().replace(
            'if __name__ == "__main__":',
            'if __name__ == "__main__":\n    import platform\n'
            '    if platform.machine() == "aarch64":\n'
            '        raise SystemExit("launcher: no aarch64 support")',
        )
    )
    result = ws.doit(timeout=3600)
    assert result.returncode != 0
    tiers = planned(ws)
    amd64, arm64 = report(tiers["runner/amd64"]), report(tiers["runner/arm64"])
    assert amd64["passed"] is True and amd64["content_hash"] == tiers["runner/amd64"].content_hash
    assert arm64["passed"] is False and arm64["content_hash"] == tiers["runner/arm64"].content_hash
    failed = [c for c in arm64["checks"] if c["status"] == "fail"]
    assert [c["name"] for c in failed] == ["smoke: python3 /opt/runner/launch.py 1"], failed
    assert "no aarch64 support" in json.dumps(arm64["probe"])
    # `latest` of every tier names what it named before, for both platforms
    assert {t: index_at(ws.registry, f"quickstart/{t}", "latest")[2] for t in TIERS} == before


def test_an_index_is_made_of_the_manifests_bytes_not_a_lying_heads_headers(
    ws: Workspace, tmp_path: Path
) -> None:
    """HEAD answers for the platform images' hash tags say size 1 and an OCI media type;
    promote still writes the very index it wrote before (sizes and types of the bytes)."""
    _, index, digest = index_at(ws.registry, "quickstart/fastext", "latest")
    deleted = urllib.request.Request(
        f"http://{ws.registry.address}/v2/quickstart/fastext/manifests/{digest}", method="DELETE"
    )
    with urllib.request.urlopen(deleted) as response:
        assert response.status == 202  # latest and py3.11 are gone with it
    # The proxy takes the registry's own address, so a copy of the stack without its build
    # folder (a fresh runner) plans the same hash tags and only promotes: through a proxy
    # of another address every tier, arm64's compile included, was built again under QEMU.
    copy = tmp_path / "quickstart"
    shutil.copytree(ws.root, copy, ignore=shutil.ignore_patterns("build"))
    through = Workspace(copy, ws.registry)
    with lying_in_place_of(ws.registry) as lies:
        lies.head_paths = re.compile(r"/quickstart/fastext/manifests/[0-9a-f]{20}$")
        lies.head_length, lies.head_type = "1", OCI_MANIFEST
        result = through.doit("promote:fastext")
        assert result.returncode == 0, result.stdout[-3000:]
        assert built(result) == [] and pushed(result) == []
        lied_to = [p for m, p in lies.requests if m == "HEAD" and lies.head_paths.search(p)]
    assert len(lied_to) >= 2  # both platforms' hash tags were asked, and lied about
    assert index_at(ws.registry, "quickstart/fastext", "latest")[1:] == (index, digest)
