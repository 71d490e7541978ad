"""The interpreter and conda finder on small file trees: found by what they are, bounded,
and never writing or wandering into container storage."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from build_graph.verify.in_image import finder


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small root: a venv, a conda root elsewhere, a renamed Python, container storage."""
    (tmp_path / "opt" / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "opt" / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "srv" / "tools" / "mf" / "conda-meta").mkdir(parents=True)
    (tmp_path / "srv" / "tools" / "mf" / "bin").mkdir()
    (tmp_path / "srv" / "tools" / "mf" / "bin" / "mamba").write_text("#!/bin/sh\n")
    (tmp_path / "srv" / "tools" / "mf" / "bin" / "mamba").chmod(0o755)
    (tmp_path / "usr" / "local" / "bin").mkdir(parents=True)
    (tmp_path / "usr" / "local" / "bin" / "mytool").symlink_to(os.path.realpath(sys.executable))
    layer = tmp_path / "var" / "lib" / "docker" / "overlay2" / "x" / "diff" / "usr" / "bin"
    layer.mkdir(parents=True)
    (layer / "python3").symlink_to(os.path.realpath(sys.executable))
    monkeypatch.setattr(finder, "ROOTS", (str(tmp_path),))
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(finder, "PREFIXES", ())
    return tmp_path


def test_walk_finds_venvs_condas_and_bins_but_not_container_storage(tree: Path) -> None:
    survey = finder.walk()
    assert survey.complete
    assert survey.venvs == [str(tree / "opt" / "venv")]
    assert survey.condas == [str(tree / "srv" / "tools" / "mf")]
    assert str(tree / "usr" / "local" / "bin") in survey.bins
    assert not any("docker" in b for b in survey.bins)


def test_a_python_under_another_name_is_found(tree: Path) -> None:
    found = finder.interpreters(finder.walk())
    [entry] = found["found"]
    assert entry["names"] == [str(tree / "usr" / "local" / "bin" / "mytool")]
    assert entry["real_path"] == os.path.realpath(sys.executable)
    assert entry["version"] == sys.version.split()[0]


def test_conda_is_named_by_path_and_reason(tree: Path) -> None:
    bashrc = tree / "root" / ".bashrc"
    bashrc.parent.mkdir()
    bashrc.write_text("# >>> conda initialize >>>\n")
    places = finder.conda(finder.walk())["places"]
    assert {"path": str(tree / "srv" / "tools" / "mf"), "why": "conda-meta folder"} in places
    assert {
        "path": str(tree / "srv" / "tools" / "mf" / "bin" / "mamba"),
        "why": "mamba executable",
    } in places


def test_asking_an_interpreter_lets_it_write_nothing(tmp_path: Path) -> None:
    """Candidates run isolated and without bytecode writes (-I -B): looking never writes."""
    log = tmp_path / "argv"
    fake = tmp_path / "python3"
    fake.write_text(
        f'#!/bin/sh\necho "$@" > {log}\n'
        'echo \'["cpython", "3.11.2", "/usr/bin/python3.11", "/usr"]\'\n'
    )
    fake.chmod(0o755)
    facts = finder.ask(str(fake))
    assert facts == {
        "implementation": "cpython",
        "version": "3.11.2",
        "real_path": "/usr/bin/python3.11",
        "prefix": "/usr",
    }
    assert log.read_text().split()[:2] == ["-I", "-B"]


def test_walk_is_bounded(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(finder, "MAX_DIRS", 3)
    survey = finder.walk()
    assert not survey.complete and survey.dirs == 4
    assert finder.interpreters(survey)["complete"] is False


def test_two_names_of_one_python_in_one_folder_are_asked_once_and_both_named(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A venv's python links to the same executable as /usr/bin's but has its own prefix
    (its pyvenv.cfg): asked apart. Two names in one folder are one answer."""
    real = os.path.realpath(sys.executable)
    local = tree / "usr" / "local" / "bin"
    (local / "mytool3").symlink_to(real)
    venv = tree / "opt" / "venv" / "bin" / "python"
    venv.symlink_to(real)
    asked: list[str] = []
    ask = finder.ask

    def counted(path: str) -> dict[str, object] | None:
        asked.append(path)
        return ask(path)

    monkeypatch.setattr(finder, "ask", counted)
    found = finder.interpreters(finder.walk())
    assert len(asked) == 2 and str(venv) in asked  # and one of mytool, mytool3
    by_prefix = {entry["prefix"]: entry["names"] for entry in found["found"]}
    assert by_prefix[str(tree / "opt" / "venv")] == [str(venv)]
    assert sorted(by_prefix[sys.base_prefix]) == [str(local / "mytool"), str(local / "mytool3")]


def test_a_file_reached_by_two_folders_is_read_once_and_listed_under_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/bin linking to /usr/bin (a merged /usr): each real file's head is read once, and
    a Python by entry point is a candidate under both names; a plain ELF file is none."""
    usr_bin = tmp_path / "usr" / "bin"
    usr_bin.mkdir(parents=True)
    (usr_bin / "renamed").write_bytes(b"\x7fELF" + b"\0" * 64 + b"Py_BytesMain\0")
    (usr_bin / "tool").write_bytes(b"\x7fELF" + b"\0" * 64 + b"main\0")
    (usr_bin / "script").write_text("#!/bin/sh\n# Py_BytesMain\n")
    for name in ("renamed", "tool", "script"):
        (usr_bin / name).chmod(0o755)
    (tmp_path / "bin").symlink_to(usr_bin)
    read: list[str] = []
    scan = finder._has_python_entry_point

    def counted(path: str) -> bool:
        read.append(path)
        return scan(path)

    monkeypatch.setattr(finder, "_has_python_entry_point", counted)
    found = finder.candidates([str(usr_bin), str(tmp_path / "bin")])
    assert found == [str(usr_bin / "renamed"), str(tmp_path / "bin" / "renamed")]
    assert sorted(read) == sorted(str(usr_bin / name) for name in ("renamed", "script", "tool"))
