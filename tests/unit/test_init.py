"""`python -m build_graph init`: a team's repository gets a stack ready for `doit` (issue 20)."""

from __future__ import annotations

import configparser
import tomllib
from pathlib import Path
from typing import Any

import pytest

from build_graph.cli import init as scaffold
from build_graph.cli.main import main
from build_graph.errors import ConfigError
from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from tests.helpers import REPO


def test_the_scaffold_dodo_is_this_repositorys() -> None:
    assert (REPO / "dodo.py").read_text() == scaffold.DODO


def test_the_scaffold_doit_cfg_registers_the_same_commands_as_pyproject() -> None:
    cfg = configparser.ConfigParser(delimiters=("=",))
    cfg.optionxform = str  # type: ignore[assignment,method-assign]
    cfg.read_string(scaffold.DOIT_CFG)
    ours = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["doit"]["plugins"]
    assert dict(cfg["COMMAND"]) == ours["command"]


def _without_contexts(path: Path) -> dict[str, Any]:
    data = tomllib.loads(path.read_text())
    contexts = {name: tier.pop("context", None) for name, tier in data["tiers"].items()}
    data["contexts"] = {k: [Path(c).name for c in v] for k, v in contexts.items() if v}
    return data


def test_the_from_source_scaffold_is_the_repositorys_own_stack() -> None:
    # One stack, two places: the root images.toml names its team code under examples/team,
    # the scaffold (examples/team/images.toml) beside it. Everything else is the same.
    assert _without_contexts(REPO / "images.toml") == _without_contexts(
        REPO / "examples" / "team" / "images.toml"
    )


@pytest.mark.parametrize("source", sorted(scaffold.SCAFFOLDS))
def test_init_writes_a_stack_that_checks_and_plans(tmp_path: Path, source: str) -> None:
    lines = scaffold.init(tmp_path / "repo", source)
    folder = tmp_path / "repo"
    assert lines[0].startswith(f"wrote {folder / 'images.toml'}")
    for name in ("images.toml", "dodo.py", "doit.cfg", "templates/README.md", ".gitignore"):
        assert (folder / name).is_file(), name
    assert not list(folder.rglob("*.lock"))  # pins are the team's to record
    assert not (folder / "build").exists() and not list(folder.rglob("__pycache__"))
    stack = load(folder / "images.toml")
    assert plan(stack)  # every context file, compile source and template it names is there


@pytest.mark.parametrize("source", sorted(scaffold.SCAFFOLDS))
def test_init_writes_the_example_byte_for_byte(tmp_path: Path, source: str) -> None:
    """What `init` writes is the example it names, hidden files included, and only the
    files that make it a repository of its own beside it."""
    example = scaffold.shipped_examples() / scaffold.SCAFFOLDS[source]
    scaffold.init(tmp_path / "repo", source)
    ours = {"dodo.py", "doit.cfg", "templates/README.md", ".gitignore"}

    def files(root: Path, skip: set[str]) -> dict[str, bytes]:
        found = {}
        for path in root.rglob("*"):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and rel not in skip:
                found[rel] = path.read_bytes()
        return found

    def state(rel: str) -> bool:  # a checkout's runs and pins: never written
        top = "/" not in rel
        return (
            rel.startswith("build/")
            or (top and rel.endswith(".lock"))
            or ("__pycache__" in rel.split("/") or rel.endswith(".pyc"))
        )

    example_files = {rel: data for rel, data in files(example, set()).items() if not state(rel)}
    assert files(tmp_path / "repo", ours) == example_files


def test_a_context_s_own_build_folder_and_lock_file_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the stack's own build/ and pins are left out: a build/ or uv.lock inside a
    context is the team's code (and in its hash)."""
    import shutil

    shipped = tmp_path / "shipped"
    shutil.copytree(
        scaffold.shipped_examples() / "quickstart",
        shipped / "quickstart",
        ignore=shutil.ignore_patterns("build", "__pycache__"),
    )
    (shipped / "quickstart" / "src" / "teamlib" / "build").mkdir()
    (shipped / "quickstart" / "src" / "teamlib" / "build" / "gen.py").write_text("X = 1\n")
    (shipped / "quickstart" / "src" / "teamlib" / "uv.lock").write_text("version = 1\n")
    (shipped / "quickstart" / "uv.lock").write_text("version = 1\n")  # not a manifest's pins
    monkeypatch.setattr(scaffold, "shipped_examples", lambda: shipped)
    scaffold.init(tmp_path / "repo", "quickstart")
    assert (tmp_path / "repo" / "src" / "teamlib" / "build" / "gen.py").read_text() == "X = 1\n"
    assert (tmp_path / "repo" / "src" / "teamlib" / "uv.lock").is_file()
    assert (tmp_path / "repo" / "uv.lock").is_file()
    assert not (tmp_path / "repo" / "images.lock").exists()


def test_an_init_quickstart_hashes_as_the_example_does(tmp_path: Path) -> None:
    """The same stack, the same pins: every tier's hash tag is the example's (a file left
    out, such as src/fastext/.gitignore, would rebuild fastext and everything on it)."""
    example = scaffold.shipped_examples() / "quickstart"
    scaffold.init(tmp_path / "repo", "quickstart")
    (tmp_path / "repo" / "images.lock").write_bytes((example / "images.lock").read_bytes())
    ours = {t.key: t.image.split(":")[-1] for t in plan(load(tmp_path / "repo" / "images.toml"))}
    theirs = {t.key: t.image.split(":")[-1] for t in plan(load(example / "images.toml"))}
    assert ours == theirs


def test_init_overwrites_nothing(tmp_path: Path) -> None:
    (tmp_path / "dodo.py").write_text("# the team's own\n")
    with pytest.raises(ConfigError) as caught:
        scaffold.init(tmp_path, "quickstart")
    assert str(caught.value) == (
        f"{tmp_path / 'dodo.py'}: exists already (or is a symlink, "
        "or leads out of the folder): `init` never overwrites and "
        "writes only inside DIR; pick an empty folder or move it "
        "away"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dodo.py"]  # nothing written


def test_init_adds_the_build_folder_to_a_teams_gitignore_once(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.pyc")
    scaffold.init(tmp_path / "", "quickstart")
    assert scaffold._ignore_build_folder(tmp_path / ".gitignore").endswith(
        "already ignores /build/"
    )
    lines = (tmp_path / ".gitignore").read_text().splitlines()
    assert lines[0] == "*.pyc" and lines.count("/build/") == 1


def test_init_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path / "stack"), "--from", "cuda"]) == 0
    assert "next: set [stack] registry in" in capsys.readouterr().out
    assert main(["init", str(tmp_path / "stack"), "--from", "cuda"]) == 2
    with pytest.raises(SystemExit) as caught:
        main(["init", str(tmp_path / "other"), "--from", "ngc"])
    assert caught.value.code == 2
    assert "invalid choice: 'ngc'" in capsys.readouterr().err


@pytest.mark.parametrize("planted", ["dodo.py", "templates", ".gitignore"])
def test_init_never_writes_through_a_symlink(tmp_path: Path, planted: str) -> None:
    """A dangling link where a file goes, a linked templates/ or a linked .gitignore would
    send the scaffold's writes anywhere on the host."""
    outside = tmp_path / "outside"
    outside.mkdir()
    team = tmp_path / "team"
    team.mkdir()
    target = outside / ("pwned" if planted != "templates" else "")
    (team / planted).symlink_to(target if planted != "templates" else outside)
    with pytest.raises(ConfigError) as caught:
        scaffold.init(team, "quickstart")
    assert planted in str(caught.value)
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in team.iterdir()) == [planted]
