"""The probe's report reaches the caller whole: in the file asked for, else on stdout.
(Every section is replaced by a constant here: what they find is tested in the
integration tests, inside real images.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from build_graph.verify.in_image import finder, probe


@pytest.fixture(autouse=True)
def quick_sections(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "python_facts",
        "virtualenv",
        "pip_check",
        "packages",
        "imports",
        "torch_facts",
        "libraries",
    ):
        monkeypatch.setattr(probe, name, lambda *args, _name=name: {"section": _name})
    monkeypatch.setattr(finder, "walk", lambda: {"section": "walk"})


def test_report_goes_to_the_file_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.json"
    assert probe.main([json.dumps({"out": str(out)})]) == 0
    assert capsys.readouterr().out == ""
    report = json.loads(out.read_text())
    assert report["packages"] == {"section": "packages"} and report["errors"] == {}


def test_an_unwritable_file_falls_back_to_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert probe.main([json.dumps({"out": str(tmp_path / "missing" / "r.json")})]) == 0
    assert json.loads(capsys.readouterr().out)["python"] == {"section": "python_facts"}
    assert probe.main([]) == 0  # no file asked for: stdout
    assert json.loads(capsys.readouterr().out)["torch"] == {"section": "torch_facts"}
