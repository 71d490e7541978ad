"""What a tier's build asks BuildKit for, and the command line each output mode makes: an
image loaded into the engine, a reproducible OCI layout then `docker load`, an OCI archive
for `reproduce`. The command lines are pinned as the code wrote them before one typed
request replaced the keyword arguments; a fake CLI records its arguments and fails."""

from __future__ import annotations

import io
import re
from dataclasses import fields
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from build_graph import settings
from build_graph.docker import buildkit
from build_graph.docker.build_request import Archive, BuildRequest, Layout, Loaded
from build_graph.errors import BuildFailed
from build_graph.log import task_log_of
from build_graph.manifest.model import Stack
from build_graph.oci.compression import Compression
from build_graph.plan.plan import PlannedTier, plan
from build_graph.registry import api
from build_graph.stages import base_platform, reproduce
from build_graph.stages import build_act as build_stage
from tests.helpers import MINIMAL, load_text

TAG = "127.0.0.1:5000/demo/app:6f1d84781c4c81aec2eb"
TWO_TIERS = MINIMAL + '\n[tiers.app]\nparent = "base"\ntemplate = "python-packages.Dockerfile.j2"\n'
# The words the fake CLI is handed after its script: `buildx build --load` (an export drops
# `--load`), recorded ahead of what the build adds.
HANDED = ["buildx", "build", "--load"]
EXPORTS = ["buildx", "build"]
IID = ["--progress=plain", "--iidfile=TMP/build-graph-*/iid"]
# The build args and secrets of the direct calls (build() below).
ARGS = ["--build-arg=A=1 2", "--build-arg=B=2"]
SECRETS = [
    "--secret=id=pipconf,src=TMP/build-graph-*/pipconf",
    "--secret=id=ca,src=TMP/build-graph-*/ca",
    "-",
]


def fake_cli(record: Path, succeed: bool = False) -> tuple[str, ...]:
    """`docker buildx build --load` that reads the context, writes each argument on a line
    of `record` and fails (or, with `succeed`, writes the image id asked for and exits 0)."""
    script = (
        'cat >/dev/null; printf "%s\\n" "$@" > "$0"; '
        'for a; do case $a in --iidfile=*) printf sha256:feed > "${a#--iidfile=}";; esac; done; '
        f"exit {0 if succeed else 1}"
    )
    return ("sh", "-c", script, str(record), *HANDED)


def recorded(record: Path, tmp_path: Path) -> list[str]:
    """The arguments the fake was run with, its temporary folders' random names starred."""
    text = record.read_text().replace(str(tmp_path), "TMP")
    text = re.sub(r"(build-graph-|\.reproduce-)[^/\n]+", r"\1*", text)
    return text.splitlines()


@pytest.fixture(autouse=True)
def no_daemon_needed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(buildkit, "cli_env", lambda: {"PATH": "/usr/bin:/bin"})
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr(
        settings,
        "for_build",
        lambda buildkit: ({"PIP_INDEX_URL": "https://pypi.example/simple"}, {"pipconf": "x\n"}),
    )


def build(command: tuple[str, ...], **asked: Any) -> tuple[str, list[str]]:
    """The build's answer (or its failure's first line) and its log lines."""
    request = BuildRequest(
        context=io.BytesIO(b"tar"),
        tag=TAG,
        name="app",
        buildargs={"B": "2", "A": "1 2"},
        secrets={"pipconf": "[global]\n", "ca": "PEM"},
        **asked,
    )
    said = io.StringIO()
    with task_log_of(said):
        try:
            answer = buildkit.build(command, request)
        except BuildFailed as exc:
            answer = str(exc).splitlines()[0]
    return answer, said.getvalue().splitlines()


def test_a_loaded_image_is_tagged_by_the_engine_and_answers_its_image_id(tmp_path: Path) -> None:
    record = tmp_path / "argv"
    answer, said = build(fake_cli(record, succeed=True), platform="linux/arm64", output=Loaded())
    assert answer == "sha256:feed"
    assert (
        said[0]
        == f"+ docker build (BuildKit) --network=host --platform=linux/arm64 -t {TAG} (tier app)"
    )
    assert re.fullmatch(rf"\[app\] built {re.escape(TAG)} in \d+\.\ds", said[-1])
    assert not list(tmp_path.glob("build-graph-*"))  # the secrets' folder is gone
    assert recorded(record, tmp_path) == [
        *HANDED,
        "--network=host",
        *IID,
        *ARGS,
        "--platform=linux/arm64",
        "-t",
        TAG,
        *SECRETS,
    ]


def test_a_reproducible_build_exports_the_layout_its_parent_seeded(tmp_path: Path) -> None:
    record = tmp_path / "argv"
    parent = tmp_path / "parent" / "oci"
    (parent / "blobs" / "sha256").mkdir(parents=True)
    (parent / "blobs" / "sha256" / "ab12").write_text("a parent's layer")
    layout = tmp_path / 'odd, "name"' / "oci"
    answer, said = build(
        fake_cli(record),
        output=Layout(layout, parent),
        compression=Compression("zstd", 3),
        network="none",
    )
    assert answer == "build of app failed (BuildKit, exit 1); last output:"
    assert said[0] == f"+ docker build (BuildKit) --network=none -t {TAG} (tier app)"
    assert (layout / "blobs" / "sha256" / "ab12").read_text() == "a parent's layer"
    assert recorded(record, tmp_path) == [
        *EXPORTS,
        "--network=none",
        *IID,
        *ARGS,
        '--output=type=oci,"dest=TMP/odd, ""name""/oci",tar=false,'
        f"name={TAG},rewrite-timestamp=true,"
        "compression=zstd,compression-level=3,oci-mediatypes=true",
        "--provenance=false",
        "--sbom=false",
        *SECRETS,
    ]


def test_an_archive_is_exported_uncached_and_not_loaded(tmp_path: Path) -> None:
    record = tmp_path / "argv"
    answer, said = build(fake_cli(record), output=Archive(tmp_path / "rebuild.oci.tar"))
    assert answer == "build of app failed (BuildKit, exit 1); last output:"
    assert said[0] == f"+ docker build (BuildKit) --network=host -t {TAG} (tier app)"
    assert recorded(record, tmp_path) == [
        *EXPORTS,
        "--network=host",
        *IID,
        *ARGS,
        f'--output=type=oci,"dest=TMP/rebuild.oci.tar",name={TAG},rewrite-timestamp=true',
        "--provenance=false",
        "--sbom=false",
        "--no-cache",
        *SECRETS,
    ]


# The build args and secret every build of the tier gets (settings.for_build, faked here).
SETTINGS = [
    "--build-arg=PIP_INDEX_URL=https://pypi.example/simple",
    "--build-arg=SOURCE_DATE_EPOCH=315532800",
]
SECRET = ["--secret=id=pipconf,src=TMP/build-graph-*/pipconf", "-"]
STAGE_ASKS = {
    "layout": [
        *EXPORTS,
        "--network=host",
        *IID,
        *SETTINGS,
        '--output=type=oci,"dest=TMP/stack/build/default/app/oci",tar=false,'
        f"name={TAG},rewrite-timestamp=true",
        "--provenance=false",
        "--sbom=false",
        *SECRET,
    ],
    "loaded": [
        *HANDED,
        "--network=host",
        *IID,
        *SETTINGS,
        "-t",
        TAG,
        *SECRET,
    ],
}


class Nowhere:
    """Holdings with the image neither here nor in the registry."""

    def local(self, image: str) -> bool:
        return False

    def require(self, image: str) -> object:
        return SimpleNamespace(presence=None)


def app_tier(tmp_path: Path, more: str = "") -> tuple[Stack, PlannedTier]:
    (tmp_path / "stack").mkdir()
    stack = load_text(tmp_path / "stack", TWO_TIERS + more)
    return stack, plan(stack)[-1]


def here(monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...], reproducible: bool) -> None:
    """`command` builds here, the `from` image has the platform, and the registry holds the
    tier's image, without labels (what `reproduce` compares with)."""
    monkeypatch.setattr(base_platform, "check", lambda tier: None)
    monkeypatch.setattr(buildkit, "cli", lambda: command)
    monkeypatch.setattr(buildkit, "reproducible_here", lambda command: reproducible)
    theirs = SimpleNamespace(ref="theirs", image=SimpleNamespace(config="sha256:c0"))
    monkeypatch.setattr(reproduce, "_registry_image", lambda tier: theirs)
    monkeypatch.setattr(api, "get_blob", lambda ref, digest: b'{"config": {"Labels": {}}}')


@pytest.mark.parametrize("mode", ["layout", "loaded"])
def test_the_build_stage_asks_for_the_tier_s_layout_where_builds_reproduce(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    stack, tier = app_tier(tmp_path)
    parent = tmp_path / "stack" / "build" / "default" / "base" / "oci" / "blobs" / "sha256"
    parent.mkdir(parents=True)
    (parent / "ab12").write_text("a parent's layer")
    record = tmp_path / "argv"
    here(monkeypatch, fake_cli(record), reproducible=mode == "layout")
    with pytest.raises(BuildFailed, match=r"^build of app failed \(BuildKit, exit 1\)"):
        build_stage.build(stack, tier, Nowhere())  # type: ignore[arg-type]
    said = recorded(record, tmp_path)
    assert [line.replace(tier.image, TAG) for line in said] == STAGE_ASKS[mode]
    seeded = tier.folder.root / "oci" / "blobs" / "sha256" / "ab12"
    assert seeded.is_file() == (mode == "layout")


def test_reproduce_asks_for_an_archive_in_its_scratch_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack, tier = app_tier(tmp_path, '\n[layers]\ncompression = "zstd"\n')
    record = tmp_path / "argv"
    here(monkeypatch, fake_cli(record), reproducible=True)
    with pytest.raises(BuildFailed, match=r"^build of app failed \(BuildKit, exit 1\)"):
        reproduce.reproduce(stack, tier, tmp_path / "scratch")
    assert recorded(record, tmp_path) == [
        *EXPORTS,
        "--network=host",
        *IID,
        *SETTINGS,
        '--output=type=oci,"dest=TMP/scratch/.reproduce-*/rebuild.oci.tar",'
        f"name={tier.image},rewrite-timestamp=true,compression=zstd,oci-mediatypes=true",
        "--provenance=false",
        "--sbom=false",
        "--no-cache",
        *SECRET,
    ]


def test_the_build_stage_and_reproduce_differ_only_in_the_output_they_ask_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack, tier = app_tier(tmp_path)
    asked: list[BuildRequest] = []

    def stop(command: tuple[str, ...], request: BuildRequest) -> str:
        asked.append(request)
        raise BuildFailed("stopped")

    here(monkeypatch, ("docker", *HANDED), reproducible=True)
    monkeypatch.setattr(buildkit, "build", stop)
    with pytest.raises(BuildFailed, match=r"^stopped$"):
        build_stage.build(stack, tier, Nowhere())  # type: ignore[arg-type]
    with pytest.raises(BuildFailed, match=r"^stopped$"):
        reproduce.reproduce(stack, tier, tmp_path / "scratch")
    stage, again = asked
    parent = tmp_path / "stack" / "build" / "default" / "base" / "oci"
    assert stage.output == Layout(tier.folder.root / "oci", parent)
    assert isinstance(again.output, Archive) and again.output.path.name == "rebuild.oci.tar"
    assert again.output.path.parent.parent == tmp_path / "scratch"

    def rest(request: BuildRequest) -> dict[str, object]:
        skip = ("context", "output")
        return {f.name: getattr(request, f.name) for f in fields(request) if f.name not in skip}

    assert rest(stage) == rest(again)
    assert rest(stage) == {
        "tag": tier.image,
        "name": "app",
        "buildargs": {
            "PIP_INDEX_URL": "https://pypi.example/simple",
            "SOURCE_DATE_EPOCH": "315532800",
        },
        "secrets": {"pipconf": "x\n"},
        "platform": None,
        "network": "host",
        "compression": Compression(),
    }
