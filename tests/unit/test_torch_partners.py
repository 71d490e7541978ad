"""torch partners are checked from facts: the shipped data, else the index (on loopback here).

The index is tests/pypi_index.py: what pypi.org answered on the day torch_releases.json was
read, served again on 127.0.0.1 (real HTTP, real zip wheels, real Range requests).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from build_graph.cli.main import main
from build_graph.gpu import releases
from build_graph.gpu.releases import Facts
from tests.helpers import MINIMAL, load_text, write_manifest
from tests.pypi_index import Index, allow_loopback, recorded, serving

STACK = MINIMAL.replace('python = "3.11"\n', 'python = "3.11"\n{versions}\n')
BUMP = 'torch = "2.15.0"\ntorchvision = "0.30.0"\ntorchaudio = "2.6.0"'
GOOD = 'torch = "2.14.1"\ntorchvision = "0.29.2"\ntorchaudio = "2.11.0"'


def stack(folder: Path, versions: str) -> Path:
    return write_manifest(folder, STACK.format(versions=versions))


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch) -> Iterator[Index]:
    """The recorded index on loopback, named by BUILD_GRAPH_PIP_INDEX_URL as builds use."""
    allow_loopback(monkeypatch)
    with serving(Index(recorded()["projects"])) as served:
        monkeypatch.setenv("BUILD_GRAPH_PIP_INDEX_URL", f"{served.url}/simple")
        yield served


def check(path: Path, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[int, str]:
    code = main(["check", "--manifest", str(path), *options])
    out, err = capsys.readouterr()
    return code, out + err


def test_the_bump_fails_naming_both_partners_and_their_right_releases(
    tmp_path: Path, index: Index, capsys: pytest.CaptureFixture[str]
) -> None:
    code, said = check(stack(tmp_path, BUMP), capsys)
    assert code == 2, said
    # torch 2.15.0 is in the shipped data; torchvision 0.30.0 is not, so the index is asked
    assert (
        "versions.torchvision: torchvision 0.30.0 does not go with torch 2.15.0: it is "
        f"not published on {index.url}/simple; use 0.29.2 (its wheels require "
        "torch>=2.14.0; no torchvision release pins torch 2.15.0)"
    ) in said
    assert (
        "versions.torchaudio: torchaudio 2.6.0 does not go with torch 2.15.0: its wheels "
        "require torch==2.6.0; use 2.11.0 (its wheels require no particular torch; no "
        "torchaudio release pins torch 2.15.0)"
    ) in said
    assert "Traceback" not in said


def test_the_bump_fails_from_the_index_alone_when_the_data_is_removed(
    tmp_path: Path,
    index: Index,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(releases, "shipped", lambda: Facts("https://pypi.org/simple"))
    code, said = check(stack(tmp_path, BUMP), capsys)
    assert code == 2, said
    assert "versions.torchvision: torchvision 0.30.0 does not go with torch 2.15.0" in said
    assert "use 0.29.2" in said
    assert (
        "versions.torchaudio: torchaudio 2.6.0 does not go with torch 2.15.0: its wheels "
        "require torch==2.6.0; use 2.11.0" in said
    )
    read = index.wheel_reads()
    assert read > 0
    # A second check asks the pages again, but reads no wheel: the rows are cached in build/
    assert check(stack(tmp_path, BUMP), capsys)[0] == 2
    assert index.wheel_reads() == read
    assert list((tmp_path / "build" / "pypi").glob("*/torchaudio-2.6.0.json"))


def test_offline_the_bump_fails_on_torchaudio_and_says_torchvision_was_not_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, said = check(stack(tmp_path, BUMP), capsys, "--offline")
    assert code == 2, said
    assert (
        "error: " in said
        and "versions.torchaudio: torchaudio 2.6.0 does not go with "
        "torch 2.15.0: its wheels require torch==2.6.0; use 2.11.0"
        in said
    )
    assert (
        "note: versions.torchvision: torchvision 0.30.0 is not in the shipped "
        "compatibility data (--offline: the index was not asked); its pairing with torch "
        "2.15.0 is not checked"
    ) in said


def test_the_shipped_data_decides_without_the_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every release here has a row: no connection at all (the unit guard would fail it)."""
    wrong = 'torch = "2.14.0"\ntorchvision = "0.28.0"\ntorchaudio = "2.6.0"'
    code, said = check(stack(tmp_path, wrong), capsys)
    assert code == 2, said
    assert (
        "versions.torchvision: torchvision 0.28.0 does not go with torch 2.14.0: its "
        "wheels require torch==2.13.0; use 0.29.0 (the release made with it: its wheels "
        "require torch==2.14.0)"
    ) in said
    assert "versions.torchaudio: torchaudio 2.6.0 does not go with torch 2.14.0" in said
    assert "use 2.11.0" in said


def test_a_correct_bump_passes_without_asking(
    tmp_path: Path, index: Index, capsys: pytest.CaptureFixture[str]
) -> None:
    code, said = check(stack(tmp_path, GOOD), capsys)
    assert (code, said.splitlines()[-1]) == (0, "ok"), said
    assert index.requests == []


@pytest.mark.parametrize(
    ("versions", "code", "says"),
    [
        # newer than the data: it may have been published since
        (
            'torch = "2.16.0"\ntorchvision = "0.31.0"',
            0,
            "note: versions.torchvision: torchvision 0.31.0 is not in the shipped compatibility "
            "data "
            "(--offline: the index was not asked); its pairing with torch 2.16.0 is not checked",
        ),
        # older than the data (it starts at torch 2.0.0's partners): not checked, not refused
        (
            'torch = "1.13.1"\ntorchvision = "0.14.1"',
            0,
            "torchvision 0.14.1 is not in the shipped compatibility data",
        ),
        # inside the data's range and not in it: not on the index
        (
            'torch = "2.14.0"\ntorchvision = "0.25.5"',
            2,
            "torchvision 0.25.5 does not go with torch 2.14.0: it is not published on "
            "https://pypi.org/simple (the shipped data, read 2026-11-23, holds every release from "
            "0.15.1 to 0.29.2); use 0.29.0",
        ),
    ],
)
def test_offline_what_the_data_cannot_answer_is_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], versions: str, code: int, says: str
) -> None:
    got, said = check(stack(tmp_path, versions), capsys, "--offline")
    assert got == code and says in said, said


def test_an_unreachable_index_leaves_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    allow_loopback(monkeypatch)
    monkeypatch.setenv("BUILD_GRAPH_PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # discard
    code, said = check(stack(tmp_path, 'torch = "2.16.0"\ntorchvision = "0.31.0"'), capsys)
    assert code == 0, said
    assert "the index could not be asked" in said and "is not checked" in said


def test_a_torch_release_the_index_does_not_have_is_an_error(
    tmp_path: Path, index: Index, capsys: pytest.CaptureFixture[str]
) -> None:
    code, said = check(stack(tmp_path, 'torch = "2.16.0"\ntorchvision = "0.31.0"'), capsys)
    assert code == 2, said
    assert (
        f"versions.torch: torch 2.16.0 is not published on {index.url}/simple; the "
        "newest release there is 2.15.0"
    ) in said


def test_an_html_index_answers_too(
    tmp_path: Path,
    index: Index,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    index.html = True
    monkeypatch.setattr(releases, "shipped", lambda: Facts("https://pypi.org/simple"))
    code, said = check(stack(tmp_path, BUMP), capsys)
    assert code == 2 and "use 0.29.2" in said and "use 2.11.0" in said, said


def test_plans_and_doit_runs_keep_to_the_shipped_data(tmp_path: Path) -> None:
    """load() without a lookup never connects (the unit guard refuses any connection)."""
    notes = load_text(tmp_path, STACK.format(versions=GOOD.replace("0.29.2", "0.31.0"))).notes
    assert any(
        "torchvision 0.31.0 is not in the shipped compatibility data (only "
        "`python -m build_graph check` asks the index)" in n
        for n in notes
    ), notes


def test_a_private_index_gets_its_credential_and_no_message_shows_it(
    tmp_path: Path,
    index: Index,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    host = index.url.removeprefix("http://")
    monkeypatch.setenv("BUILD_GRAPH_PIP_INDEX_URL", f"http://ci:s3cret@{host}/simple")
    monkeypatch.setattr(releases, "shipped", lambda: Facts("https://pypi.org/simple"))
    code, said = check(stack(tmp_path, BUMP), capsys)
    assert code == 2 and "use 0.29.2" in said, said
    assert "Basic Y2k6czNjcmV0" in index.auth  # base64 of ci:s3cret, on the index's pages
    assert "s3cret" not in said and f"http://***@{host}/simple" in said
    assert not any("s3cret" in p.read_text() for p in (tmp_path / "build").rglob("*.json"))
    monkeypatch.setenv("BUILD_GRAPH_PIP_INDEX_URL", "http://ci:s3cret@127.0.0.1:9/simple")
    code, said = check(stack(tmp_path, 'torch = "2.16.0"\ntorchvision = "0.31.0"'), capsys)
    assert code == 0 and "could not be asked" in said and "s3cret" not in said, said


def test_a_file_host_without_range_requests_leaves_a_note(
    tmp_path: Path,
    index: Index,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    index.ranges = False
    monkeypatch.setattr(releases, "shipped", lambda: Facts("https://pypi.org/simple"))
    code, said = check(stack(tmp_path, 'torch = "2.14.0"\ntorchvision = "0.29.0"'), capsys)
    assert code == 0, said
    assert "does not answer range requests" in said and "is not checked" in said


@pytest.mark.parametrize(
    ("triton", "says"),
    [
        ("3.2.0", None),
        (
            "3.3.0",
            "versions.triton: torch 2.6.0's wheels require triton==3.2.0, not 3.3.0; use "
            "3.2.0 (https://files.pythonhosted.org/packages/",
        ),
        ("main", "versions.triton: torch 2.6.0's wheels require triton==3.2.0, not main"),
        (
            "3.8.0",
            "versions.triton: torch 2.15.0's wheels require triton~=3.9.0, not 3.8.0; use 3.9.0",
        ),
    ],
)
def test_triton_must_be_what_torch_requires(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], triton: str, says: str | None
) -> None:
    torch = "2.15.0" if triton == "3.8.0" else "2.6.0"
    code, said = check(stack(tmp_path, f'torch = "{torch}"\ntriton = "{triton}"'), capsys)
    assert (
        (code, said.splitlines()[-1]) == (0, "ok") if says is None else (code == 2 and says in said)
    ), said


@pytest.mark.parametrize(
    ("given", "triton", "line"),
    [
        ('torch = "2.14.1"', "3.8.0", "13.0"),  # ~=3.8.0 and cuda-toolkit==13.0.3
        ('torch = "2.6.0"', "3.2.0", "12.4"),  # ==3.2.0 and the cu124 runtime
        ('torch = "2.14.1"\ntriton = "3.8.0"\ncuda = "13.0.2"', "3.8.0", None),  # kept, no note
        ('torch = "9.9.0"', None, None),  # a torch the data does not know: nothing filled
    ],
)
def test_triton_follows_from_torch_and_the_cuda_line_is_said(
    tmp_path: Path, given: str, triton: str | None, line: str | None
) -> None:
    """`cuda` is never filled in: verify compares a stated cuda with torch.version.cuda,
    and a CPU-only torch has none (the quickstart with torch added must still verify)."""
    loaded = load_text(tmp_path, STACK.format(versions=given))
    versions = loaded.variants[0].versions
    assert versions.get("triton") == triton
    assert versions.get("cuda") == ("13.0.2" if "cuda" in given else None)
    filled = [n for n in loaded.notes if "set versions.triton to choose" in n]
    assert len(filled) == ("triton" not in given and triton is not None), loaded.notes
    said = [n for n in loaded.notes if "set versions.cuda (e.g." in n]
    assert said == (
        [
            f"versions.cuda: not set: torch {given.split(chr(34))[1]}'s PyPI wheel "
            f'is built for CUDA {line}; set versions.cuda (e.g. "{line}") for verify '
            "to check it, or leave it out for a CPU torch"
        ]
        if line
        else []
    ), said
