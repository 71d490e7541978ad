"""`python -m build_graph outdated` against the recorded index on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from build_graph.cli.main import main
from tests.helpers import MINIMAL, write_manifest
from tests.pypi_index import Index, allow_loopback, recorded, serving

# pip's and setuptools' newest wheels on pypi.org, 2026-11-23 (their page, trimmed).
TOOLS = {
    "pip": {
        v: {
            "path": f"/packages/{h}/pip-{v}-py3-none-any.whl",
            "metadata": f"Metadata-Version: 2.4\nName: pip\nVersion: {v}\n",
        }
        for v, h in (
            ("26.2", "62/36/a3aed958d60531cb442b7ab4596cda7b3621cfb916f8ae1d6769795c7dc1"),
            ("26.3", "07/25/ee8c38ae72d66b844ce8eb9711ba905dba21ca1a8a0c960057c41cd23337"),
        )
    },
    "setuptools": {
        "84.2.1": {
            "path": "/packages/ef/55/6dc6d6bb953bdfc52519a0059592c52b6e3b8ad5"
            "1cf8256dffceb55b0610/setuptools-84.2.1-py3-none-any.whl",
            "metadata": "Name: setuptools\nVersion: 84.2.1\n",
        }
    },
}
VERSIONS = """python = "3.11"
cuda = "13.0.2"
torch = "2.13.0"
torchvision = "0.28.0"
torchaudio = "2.11.0"
triton = "3.7.1"
pip = "26.2"
setuptools = "84.2.1"
"""
VARIANTS = """
[variants.cu130]

[variants.newest.versions]
torch = "2.15.0"
torchvision = "0.29.2"
torchaudio = "2.11.0"
triton = "3.9.0"
"""
STACK = MINIMAL.replace('python = "3.11"\n', VERSIONS) + VARIANTS


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch) -> Iterator[Index]:
    allow_loopback(monkeypatch)
    with serving(Index({**recorded()["projects"], **TOOLS})) as served:
        monkeypatch.setenv("BUILD_GRAPH_PIP_INDEX_URL", f"{served.url}/simple")
        yield served


def test_outdated_names_each_newer_release_and_the_edit_that_takes_it(
    tmp_path: Path, index: Index, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_manifest(tmp_path, STACK)
    # the `from` lines are tests/unit/test_outdated_from.py's
    assert main(["outdated", "--no-from-tags", "--manifest", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "variant cu130:",
        '  torch 2.13.0 -> 2.15.0: edit versions.torch = "2.15.0"',
        '    torchvision 0.28.0 -> 0.29.2: edit versions.torchvision = "0.29.2" (it requires '
        "torch>=2.14.0)",
        "    torchaudio 2.11.0: keep (it requires no particular torch)",
        "    triton 3.7.1: torch 2.15.0's wheels require triton~=3.9.0 (edit versions.triton = "
        '"3.9.0")',
        "    cuda 13.0.2: torch 2.15.0's PyPI wheel is built for CUDA 13.2 (edit versions.cuda;"
        " the release matrix, gpu/tables.py, has no row for it yet)",
        '  pip 26.2 -> 26.3: edit versions.pip = "26.3"',
        "  setuptools 84.2.1: up to date",
        "variant newest:",
        "  torch 2.15.0: up to date",
        '  pip 26.2 -> 26.3: edit versions.pip = "26.3"',
        "  setuptools 84.2.1: up to date",
    ]
    # the proposed edit passes check (on the same index)
    edited = STACK.replace(
        'torch = "2.13.0"\ntorchvision = "0.28.0"', 'torch = "2.15.0"\ntorchvision = "0.29.2"'
    ).replace('triton = "3.7.1"', 'triton = "3.9.0"')
    assert main(["check", "--manifest", str(write_manifest(tmp_path, edited))]) == 0


def test_outdated_keeps_a_config_error_an_error(
    tmp_path: Path, index: Index, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_manifest(
        tmp_path, STACK.replace('torchaudio = "2.11.0"\ntriton', 'torchaudio = "2.6.0"\ntriton')
    )
    assert main(["outdated", "--manifest", str(path)]) == 2
    assert "versions.torchaudio" in capsys.readouterr().err


def test_a_triton_that_follows_torch_gets_no_edit_of_its_own(
    tmp_path: Path, index: Index, capsys: pytest.CaptureFixture[str]
) -> None:
    """Left out of images.toml, triton follows torch (resolve.follow_torch): bumping torch
    is the whole edit, so outdated names no versions.triton key the file does not have."""
    path = write_manifest(tmp_path, STACK.replace('triton = "3.7.1"\n', ""))
    assert main(["outdated", "--manifest", str(path), "--no-from-tags"]) == 0
    out = capsys.readouterr().out
    assert '  torch 2.13.0 -> 2.15.0: edit versions.torch = "2.15.0"' in out
    assert "versions.triton" not in out and "triton 3.7" not in out
