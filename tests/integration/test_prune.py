"""prune against a real registry with deletes: after several edits and rebuilds it deletes
exactly the unneeded hash tags and their reports, keeps the promoted, planned, recent and
unreadable ones, and a run after it rebuilds nothing. One built workspace for the module."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from build_graph.oci.refs import Presence, parse_ref
from build_graph.registry import api
from tests.support.registry import Registry
from tests.support.workspace import Workspace, built, make_workspace, pushed

pytestmark = pytest.mark.integration
REPO = "quickstart/runner"
MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json"


@dataclass
class History:
    ws: Workspace
    runner: list[str]  # the runner's hash tags, oldest first (the last is the plan's)
    digests: list[str]


def runner_hash(ws: Workspace) -> str:
    rows = json.loads(prune_cli(ws, "plan", "--json", "--offline", command=True).stdout)
    return str(next(row["hash"] for row in rows if row["tier"] == "runner"))


def prune_cli(ws: Workspace, *args: str, command: bool = False) -> subprocess.CompletedProcess[str]:
    argv = list(args) if command else ["prune", *args]
    result = subprocess.run(
        [sys.executable, "-m", "build_graph", *argv, "--manifest", str(ws.manifest)],
        capture_output=True,
        text=True,
        check=False,
    )
    print(result.stdout[-5000:], result.stderr[-5000:])
    return result


def registry_get(
    reg: Registry,
    path: str,
    method: str = "GET",
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> bytes:
    request = urllib.request.Request(
        f"http://{reg.address}/v2/{REPO}/{path}", data=body, method=method, headers=headers or {}
    )
    with urllib.request.urlopen(request) as response:
        return bytes(response.read())


def manifest(reg: Registry, tag: str) -> dict[str, object]:
    """The image manifest `tag` names: itself, or the one image of its index (the containerd
    image store pushes every image as an index with its provenance attestation)."""
    data = json.loads(
        api.get_manifest(api.read_image(parse_ref(f"{reg.address}/{REPO}:{tag}")).ref).body
    )
    assert isinstance(data, dict)
    return data


def layers(reg: Registry, tag: str) -> dict[str, int]:
    entries = manifest(reg, tag)["layers"]
    assert isinstance(entries, list)
    return {str(e["digest"]): int(e["size"]) for e in entries}


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory, registry: Registry) -> Iterator[History]:
    """Four builds of the runner (three edits of its launcher); the second is tagged
    'release' by hand, the first loses its config blob (an image whose state is unreadable)."""
    ws = make_workspace(tmp_path_factory.mktemp("prune"), registry)
    runner: list[str] = []
    for edit in range(4):
        if edit:
            launcher = ws.root / "launcher" / "launch.py"
            launcher.write_text(launcher.read_text() + f"# edit {edit}\n")
        result = ws.doit()
        assert result.returncode == 0, result.stdout[-3000:]
        runner.append(runner_hash(ws))
    assert len(set(runner)) == 4
    digests = [str(registry.digest(REPO, tag)) for tag in runner]
    second = api.get_manifest(parse_ref(f"{registry.address}/{REPO}:{runner[1]}"))
    registry_get(
        registry, "manifests/release", "PUT", second.body, {"Content-Type": second.media_type}
    )
    config = manifest(registry, runner[0])["config"]
    assert isinstance(config, dict)
    registry_get(registry, f"blobs/{config['digest']}", "DELETE")
    yield History(ws, runner, digests)


def reports_of(reg: Registry, digest: str) -> list[str]:
    prefix = digest.replace(":", "-", 1) + "."
    return [t for t in reg.tags(REPO) if t.startswith(prefix)]


def test_a_dry_run_with_the_defaults_keeps_every_recent_build(history: History) -> None:
    before = history.ws.registry.tags(REPO)
    result = prune_cli(history.ws)
    assert result.returncode == 0, result.stderr
    assert "0 image(s) to delete" in result.stdout
    assert "kept: its state could not be read (its config blob" in result.stdout
    assert history.ws.registry.tags(REPO) == before


def test_a_reproducible_build_verified_minutes_ago_is_young_though_its_created_is_1980(
    history: History,
) -> None:
    unneeded = history.runner[2]
    config = manifest(history.ws.registry, unneeded)["config"]
    assert isinstance(config, dict)
    blob = registry_get(history.ws.registry, f"blobs/{config['digest']}", "GET")
    created = json.loads(blob)["created"]
    assert created.startswith("1980-01-01T00:00:00")  # the fixed time: it dates nothing
    result = prune_cli(history.ws, "--keep", "0")  # the default --older-than 14d
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if unneeded in x)
    assert "kept: younger than 14d (built " in line, line
    assert "0 image(s) to delete" in result.stdout


def test_prune_deletes_exactly_the_unneeded_build_and_its_report(history: History) -> None:
    reg, (unreadable, released, unneeded, current) = history.ws.registry, history.runner
    assert reports_of(reg, history.digests[2])  # verify stored a report for every build
    freed = {
        d: s
        for d, s in layers(reg, unneeded).items()
        if not any(d in layers(reg, t) for t in (unreadable, released, current))
    }
    dry = prune_cli(history.ws, "--keep", "1", "--older-than", "0s")
    assert f"would delete 127.0.0.1:{reg.port}/{REPO}:{unneeded}" in dry.stdout
    assert f"{sum(freed.values())} bytes" in dry.stdout
    assert freed and sum(freed.values()) > 0
    before = reg.tags(REPO)
    # What the tag names and holds: on the containerd store an index, the platform image and
    # its attestation inside it; all go, or a registry's garbage collection keeps the layers.
    doomed = parse_ref(f"{reg.address}/{REPO}:{unneeded}")
    named = api.read_contents(doomed)
    manifests = [named.digest, *named.refers_to]

    result = prune_cli(history.ws, "--keep", "1", "--older-than", "0s", "--yes")

    assert result.returncode == 0, result.stderr
    assert "1 image(s) deleted" in result.stdout
    for digest in manifests:
        assert api.head_manifest(doomed.at(str(digest))).presence is Presence.ABSENT, digest
    gone = {unneeded, *reports_of_before(before, history.digests[2])}
    assert set(reg.tags(REPO)) == set(before) - gone
    for tag in (unreadable, released, current, "release", "latest"):
        assert tag in reg.tags(REPO)
    assert reports_of(reg, history.digests[3])  # the current build's report stays
    again = prune_cli(history.ws, "--keep", "1", "--older-than", "0s", "--yes")
    assert "0 image(s) deleted" in again.stdout
    run = history.ws.doit()
    assert run.returncode == 0, run.stdout[-3000:]
    assert built(run) == [] and pushed(run) == []


def reports_of_before(tags: list[str], digest: str) -> list[str]:
    """Every artifact tag about `digest`: its report, its SBOM and its referrers index."""
    index = digest.replace(":", "-", 1)
    found = [t for t in tags if t.startswith(f"{index}.")]
    assert found and index in tags
    return [*found, index]


def test_prune_with_the_registry_down_deletes_nothing(history: History) -> None:
    reg = history.ws.registry
    before = reg.tags(REPO)
    reg.stop()
    try:
        result = prune_cli(history.ws, "--keep", "0", "--older-than", "0s", "--yes")
    finally:
        reg.start()
    assert result.returncode == 3
    assert f"cannot ask the registry 127.0.0.1:{reg.port}" in result.stderr
    assert "deleted" not in result.stdout
    assert reg.tags(REPO) == before


def current_report(history: History) -> tuple[str, dict[str, object], str]:
    """(tag, layer descriptor, payload) of the current runner build's verify report."""
    reg = history.ws.registry
    [tag] = [t for t in reports_of(reg, history.digests[3]) if ".verify-" in t]
    data = json.loads(
        registry_get(
            reg,
            f"manifests/{tag}",
            headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
        )
    )
    [layer] = data["layers"]
    return tag, layer, registry_get(reg, f"blobs/{layer['digest']}").decode()


def test_the_report_is_an_in_toto_statement(history: History) -> None:
    from google.protobuf import json_format
    from in_toto_attestation.v1 import statement_pb2
    from in_toto_attestation.v1.statement import Statement

    _tag, layer, payload = current_report(history)
    assert layer["mediaType"] == "application/vnd.in-toto+json"
    statement = Statement.copy_from_pb(json_format.Parse(payload, statement_pb2.Statement()))
    statement.validate()
    [subject] = statement.pb.subject
    assert subject.name == f"{history.ws.registry.address}/{REPO}"
    assert f"sha256:{subject.digest['sha256']}" == history.digests[3]
    assert statement.pb.predicate["passed"] is True


def test_an_old_bare_report_still_counts(history: History) -> None:
    """A report stored before issue 22 (bare JSON, the old media type) under the same tag:
    the next run reads it and verifies nothing again."""
    from build_graph.oci.refs import parse_ref
    from build_graph.registry import api, artifacts
    from build_graph.registry.reports import OLD_ARTIFACT_TYPE

    tag, _layer, payload = current_report(history)
    image = parse_ref(f"{history.ws.registry.address}/{REPO}@{history.digests[3]}")
    bare = json.dumps(json.loads(payload)["predicate"]).encode()
    artifacts.publish(
        image, api.head_manifest(image), tag.split(".", 1)[1], OLD_ARTIFACT_TYPE, bare, {}
    )
    assert current_report(history)[1]["mediaType"] == OLD_ARTIFACT_TYPE
    run = history.ws.doit()
    assert run.returncode == 0, run.stdout[-3000:]
    assert "probe.py" not in run.stdout and built(run) == [] == pushed(run)


def test_the_sbom_is_stored_beside_the_report_and_lists_what_is_installed(history: History) -> None:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    result = prune_cli(history.ws, "sbom", "runner", command=True)
    assert result.returncode == 0, result.stderr
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(result.stdout) is None
    components = json.loads(result.stdout)["components"]
    purls = {c["purl"].split("@")[0] for c in components}
    assert {"pkg:pypi/fastext", "pkg:deb/debian/python3"} <= purls  # compiled; Debian's
    fastext = next(c for c in components if c["name"] == "fastext")
    assert fastext["version"] == "1.0.0"
    assert fastext["properties"][0]["value"].endswith("-packages")
    assert f"{history.digests[3].replace(':', '-')}.sbom" in history.ws.registry.tags(REPO)
    info = history.ws.doit("info", "runner")
    assert info.returncode == 0, info.stderr
    address = history.ws.registry.address
    assert f"  at {address}/{REPO}:{history.digests[3].replace(':', '-')}.verify-" in info.stdout
    assert f"SBOM: {address}/{REPO}:{history.digests[3].replace(':', '-')}.sbom" in info.stdout


class NoDeletes(Registry):
    """A real distribution registry whose operator did not enable deletes."""

    def command(self) -> list[str]:
        command = super().command()
        config = self.folder / "config.yml"
        config.write_text(config.read_text().replace("enabled: true", "enabled: false"))
        return command


def push_old_image(reg: Registry, repo: str, tag: str) -> None:
    """A small image created in 2020 under `tag`, pushed over the registry's API."""
    ref = parse_ref(f"{reg.address}/{repo}:{tag}")
    config = json.dumps(
        {
            "created": "2020-01-01T00:00:00.123456789Z",
            "architecture": "amd64",
            "os": "linux",
            "rootfs": {"type": "layers", "diff_ids": []},
            # a build of the quickstart stack, as its labels say (prune judges
            # only this stack's builds)
            "config": {"Labels": {"io.build-graph.stack": "quickstart"}},
        }
    ).encode()
    layer = b"not really a layer, but a blob of 42 bytes"
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "digest": str(api.put_blob(ref, config)),
            "size": len(config),
        },
        "layers": [
            {
                "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                "digest": str(api.put_blob(ref, layer)),
                "size": len(layer),
            }
        ],
    }
    api.put_manifest(ref, json.dumps(manifest).encode(), MANIFEST_TYPE)


def test_a_registry_that_refuses_deletes_is_one_line(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from tests.support.servers import free_port

    reg = NoDeletes(tmp_path_factory.mktemp("nodeletes"), free_port())
    reg.start()
    try:
        ws = make_workspace(tmp_path_factory.mktemp("nodeletes-ws"), reg)
        push_old_image(reg, "quickstart/builder", "0123456789abcdef0123")
        dry = prune_cli(ws, "--keep", "0", "--older-than", "0s")
        assert "would delete" in dry.stdout and "42 bytes" in dry.stdout
        result = prune_cli(ws, "--keep", "0", "--older-than", "0s", "--yes")
    finally:
        reg.discard()
    assert result.returncode == 3
    [line] = result.stderr.splitlines()
    assert f"the registry {reg.address} does not allow deletes" in line
    assert "storage.delete.enabled: true" in line
