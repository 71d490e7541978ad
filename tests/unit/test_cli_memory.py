"""What a docker CLI says about itself is remembered while what decides it is unchanged,
and asked again when any of it moves: the binary, a plugin that would now be run, the
config naming plugin folders, the daemon; never behind a wrapper script, never a failure."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from build_graph.docker import cli_memory

ELF = b"\x7fELF" + b"\0" * 60


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A docker 'binary', a system plugin folder holding buildx, a config folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "config"))
    monkeypatch.delenv("DOCKER_CLI_PLUGIN_EXTRA_DIRS", raising=False)
    system = tmp_path / "system" / "cli-plugins"
    system.mkdir(parents=True)
    (system / "docker-buildx").write_bytes(ELF + b"buildx 0.29")
    monkeypatch.setattr(cli_memory, "_SYSTEM_PLUGIN_DIRS", (str(system),))
    exe = tmp_path / "bin" / "docker"
    exe.parent.mkdir()
    exe.write_bytes(ELF + b"docker 28.5")
    return exe


class Asker:
    def __init__(self, answer: str | None = "github.com/docker/buildx v0.29.1") -> None:
        self.answer, self.asked = answer, 0

    def __call__(self) -> str | None:
        self.asked += 1
        return self.answer


def buildx(exe: Path, ask: Asker) -> str | None:
    return cli_memory.remembered("buildx", cli_memory.buildx_key(str(exe)), ask)


def test_asked_once_then_remembered_across_runs(cli: Path) -> None:
    ask = Asker()
    assert buildx(cli, ask) == ask.answer
    assert buildx(cli, ask) == ask.answer
    assert ask.asked == 1


def test_a_replaced_plugin_is_asked_again(cli: Path, tmp_path: Path) -> None:
    ask = Asker()
    buildx(cli, ask)
    plugin = tmp_path / "system" / "cli-plugins" / "docker-buildx"
    plugin.unlink()  # an upgrade: a new file in its place
    plugin.write_bytes(ELF + b"buildx 0.30.0")  # another length: not by mtime alone
    buildx(cli, ask)
    assert ask.asked == 2


def test_a_plugin_that_would_now_shadow_it_is_asked_again(cli: Path, tmp_path: Path) -> None:
    ask = Asker()
    buildx(cli, ask)
    mine = tmp_path / "config" / "cli-plugins"
    mine.mkdir(parents=True)
    (mine / "docker-buildx").write_bytes(ELF + b"buildx 0.12")
    buildx(cli, ask)
    assert ask.asked == 2


def test_config_naming_another_plugin_folder_is_asked_again(cli: Path, tmp_path: Path) -> None:
    ask = Asker()
    buildx(cli, ask)
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "docker-buildx").write_bytes(ELF + b"buildx 0.10")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.json").write_text(
        json.dumps({"cliPluginsExtraDirs": [str(extra)]})
    )
    buildx(cli, ask)
    assert ask.asked == 2
    key = cli_memory.buildx_key(str(cli))
    assert key is not None and any(line.startswith(str(extra)) for line in key)


def test_a_replaced_cli_is_asked_again(cli: Path) -> None:
    ask = Asker()
    buildx(cli, ask)
    cli.unlink()
    cli.write_bytes(ELF + b"docker 29.1.0")
    buildx(cli, ask)
    assert ask.asked == 2


def test_behind_a_wrapper_script_every_run_asks(cli: Path) -> None:
    """A script can start a binary no key sees: nothing about it is remembered."""
    cli.write_text('#!/bin/sh\nexec /opt/docker/bin/docker "$@"\n')
    ask = Asker()
    buildx(cli, ask)
    buildx(cli, ask)
    assert ask.asked == 2
    assert cli_memory.buildx_key(str(cli)) is None
    assert cli_memory.api_key(str(cli), "28.5.2", "1.24") is None


def test_an_unreadable_config_asks_every_run(cli: Path, tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.json").write_text("{not json")
    assert cli_memory.buildx_key(str(cli)) is None


def test_a_failure_is_not_remembered(cli: Path) -> None:
    failing = Asker(answer=None)
    assert buildx(cli, failing) is None
    ask = Asker()
    assert buildx(cli, ask) == ask.answer
    assert ask.asked == 1


def test_damaged_memory_is_asked_again_not_trusted(cli: Path, tmp_path: Path) -> None:
    buildx(cli, Asker())
    [kept] = (tmp_path / "cache" / "build-graph" / "docker-cli").iterdir()
    for damage in ("", "{", json.dumps({"key": ["another"], "answer": "v9"}), "[]"):
        kept.write_text(damage)
        ask = Asker()
        assert buildx(cli, ask) == ask.answer
        assert ask.asked == 1


def test_the_api_version_moves_with_the_daemon_and_the_setting(
    cli: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ask = Asker("1.51")

    def api(engine: str) -> str | None:
        return cli_memory.remembered("api", cli_memory.api_key(str(cli), engine, "1.24"), ask)

    api("28.5.2")
    api("28.5.2")
    assert ask.asked == 1
    api("29.1.0")
    assert ask.asked == 2
    monkeypatch.setenv("DOCKER_API_VERSION", "1.41")
    api("29.1.0")
    assert ask.asked == 3
    assert cli_memory.api_key(str(cli), "", "1.24") is None  # not Docker Engine: asked


def test_the_key_holds_no_secret_of_the_config(cli: Path, tmp_path: Path) -> None:
    """config.json holds registry credentials: the kept key names its hash, not its bytes."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.json").write_text(
        json.dumps({"auths": {"r.example": {"auth": "c2VjcmV0OnRva2Vu"}}})
    )
    buildx(cli, Asker())
    [kept] = (tmp_path / "cache" / "build-graph" / "docker-cli").iterdir()
    assert "c2VjcmV0OnRva2Vu" not in kept.read_text()
    assert os.stat(kept).st_size < 4096


def test_an_elf_launcher_under_another_name_every_run_asks(cli: Path, tmp_path: Path) -> None:
    """Ubuntu's snap links `docker` to /usr/bin/snap, an ELF file that runs the snap's own
    CLI and buildx from folders no key sees; depot links `docker-buildx` to `depot`."""
    snap = tmp_path / "usr" / "bin" / "snap"
    snap.parent.mkdir(parents=True)
    snap.write_bytes(ELF + b"snapd")
    linked = tmp_path / "snap-bin" / "docker"
    linked.parent.mkdir()
    linked.symlink_to(snap)
    assert cli_memory.buildx_key(str(linked)) is None
    assert cli_memory.api_key(str(linked), "28.5.2", "1.24") is None
    plugin = tmp_path / "system" / "cli-plugins" / "docker-buildx"
    depot = tmp_path / "depot"
    depot.write_bytes(ELF + b"depot")
    plugin.unlink()
    plugin.symlink_to(depot)
    assert cli_memory.buildx_key(str(cli)) is None


def test_a_dangling_plugin_link_is_absent_as_the_cli_finds_it(cli: Path, tmp_path: Path) -> None:
    mine = tmp_path / "config" / "cli-plugins"
    mine.mkdir(parents=True)
    (mine / "docker-buildx").symlink_to(tmp_path / "uninstalled")
    key = cli_memory.buildx_key(str(cli))
    assert key is not None and f"{mine / 'docker-buildx'} absent" in key


def test_names_that_are_not_utf_8_are_remembered_without_a_traceback(
    cli: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.json").write_text('{"cliPluginsExtraDirs": ["/x/\\udc80"]}')
    monkeypatch.setenv("HOME", "/home/\udcff")
    ask = Asker()
    assert buildx(cli, ask) == ask.answer
    assert buildx(cli, ask) == ask.answer
    assert ask.asked == 1


def test_config_nested_past_the_parser_s_limit_asks_without_a_traceback(
    cli: Path, tmp_path: Path
) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.json").write_text("[" * 100_000)
    assert cli_memory.buildx_key(str(cli)) is None
