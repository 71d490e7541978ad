"""Remote builders without a daemon: which daemons get bind mounts and which get copies, the
one endpoint the CLI and docker-py share, and what a container's copy-back may bring."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import zstandard

from build_graph.docker import buildkit, connection
from build_graph.docker.files import SETTING, ChunkReader, mode_for
from build_graph.errors import EnvironmentProblem
from build_graph.untar import ArchiveError, replace_folder_from
from tests.hostile_archives import CASES, member, tar_bytes


@pytest.mark.parametrize(
    ("host", "setting", "chosen"),
    [
        ("unix:///var/run/docker.sock", "", "bind"),
        ("unix:///tmp/x/docker.sock", "auto", "bind"),
        ("tcp://10.0.0.5:2376", "", "copy"),
        ("ssh://builder@gpu-box", "", "copy"),
        ("npipe:////./pipe/docker_engine", "", "copy"),
        ("unix:///var/run/docker.sock", "copy", "copy"),
        ("tcp://nfs-sharing-host:2376", "Bind", "bind"),
    ],
)
def test_bind_mounts_only_where_the_daemon_shares_this_host(
    host: str, setting: str, chosen: str
) -> None:
    assert mode_for(host, setting) == chosen


def test_an_unknown_files_setting_names_the_setting_and_the_choices() -> None:
    with pytest.raises(EnvironmentProblem, match=f"{SETTING}=rsync: not a choice; `bind`"):
        mode_for("unix:///var/run/docker.sock", "rsync")


def test_the_cli_is_pinned_to_the_daemon_docker_py_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.delenv("DOCKER_CONTEXT", raising=False)
    monkeypatch.setenv("DOCKER_CONFIG", "/nonexistent")
    assert buildkit.cli_env()["DOCKER_HOST"] == connection.DEFAULT_HOST
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:2375")
    monkeypatch.setenv("DOCKER_CONTEXT", "elsewhere")  # the CLI follows DOCKER_HOST over it
    monkeypatch.setenv("BUILDX_BUILDER", "remote-arm")  # a buildx builder elsewhere
    env = buildkit.cli_env()
    assert env["DOCKER_HOST"] == "tcp://127.0.0.1:2375" and "DOCKER_CONTEXT" not in env
    assert "BUILDX_BUILDER" not in env


@pytest.mark.parametrize("via", ["environment", "config"])
def test_a_docker_context_that_would_split_the_clients_is_refused(
    via: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.delenv("DOCKER_CONTEXT", raising=False)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    if via == "environment":
        monkeypatch.setenv("DOCKER_CONTEXT", "gpu-box")
    else:
        (tmp_path / "config.json").write_text(json.dumps({"currentContext": "gpu-box"}))
    with pytest.raises(EnvironmentProblem, match="docker context 'gpu-box' is selected"):
        buildkit.cli_env()
    (tmp_path / "config.json").write_text(json.dumps({"currentContext": "default"}))
    monkeypatch.delenv("DOCKER_CONTEXT", raising=False)
    buildkit.cli_env()


def chunks(data: bytes, size: int = 777) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_a_copied_back_folder_arrives_whole(tmp_path: Path) -> None:
    tar = tar_bytes(
        [member("./", b"5"), member("./a/b.txt", data=b"x" * 5000), member("./c", data=b"y")]
    )
    reader = ChunkReader(iter(chunks(tar)))
    replace_folder_from(reader, tmp_path / "out", limit=len(tar))
    assert (tmp_path / "out" / "a" / "b.txt").read_bytes() == b"x" * 5000
    assert reader.total == len(tar)


@pytest.mark.parametrize("name", [n for n in CASES if "zstd" not in n and "frame" not in n])
def test_a_hostile_copy_back_leaves_the_folder_as_it_was(name: str, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    tar = zstandard.ZstdDecompressor().decompressobj().decompress(CASES[name].make(outside))
    folder = tmp_path / "ccache"
    folder.mkdir()
    (folder / "warm").write_text("entry")
    with pytest.raises(ArchiveError, match=CASES[name].reason.replace("'", ".")):
        replace_folder_from(ChunkReader(iter(chunks(tar))), folder, limit=1 << 20)
    assert os.listdir(folder) == ["warm"] and os.listdir(outside) == []
    assert sorted(os.listdir(tmp_path)) == ["ccache", "outside"]


def test_a_copy_back_over_its_limit_is_refused_whole(tmp_path: Path) -> None:
    tar = tar_bytes([member("./big", data=b"z" * 50_000)])
    with pytest.raises(ArchiveError, match="more than 10000 bytes"):
        replace_folder_from(ChunkReader(iter(chunks(tar))), tmp_path / "out", limit=10_000)
    assert not (tmp_path / "out").exists()
