"""Nothing of the tool or the host in a context, and a plan cache that notices every input
the hash reads (issue 18: "local files are input too", "nothing of the host")."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from build_graph.errors import ConfigError
from build_graph.manifest.load import load
from build_graph.plan import cache
from build_graph.plan.cache import load_plan
from build_graph.plan.context import ContextError, context_files, source_files, tool_owned
from build_graph.plan.plan import PlannedTier, plan
from build_graph.stages.sources import stage_sources
from tests.helpers import MINIMAL, write_manifest

DOT = (
    MINIMAL
    + """
[tiers.app]
parent = "base"
template = "training.Dockerfile.j2"
context = ["."]
"""
)


def tier(planned: list[PlannedTier], name: str) -> PlannedTier:
    return next(t for t in planned if t.spec.name == name)


def tool_litter(folder: Path) -> None:
    """What runs leave beside a manifest: build/, a virtualenv, doit's database."""
    for name in (
        "build/.plan-cache.images.toml.pickle",
        "build/default/app/push.json",
        "build/ccache-store/x.tar.zst",
        ".venv/bin/python",
        "sub/.venv/pyvenv.cfg",
        ".doit.db",
        ".doit.db.dat",
        "sub/.doit.db.dir",
    ):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(f"{name} {os.urandom(4).hex()}\n")


@pytest.fixture
def dot(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text("print('hi')\n")
    return write_manifest(tmp_path, DOT)


def test_a_dot_context_sends_nothing_of_the_tool(dot: Path) -> None:
    tool_litter(dot.parent)
    sent = [name for name, _ in tier(plan(load(dot)), "app").context_files]
    assert sent == ["app.py", "images.toml"]


def test_a_dot_context_hash_settles_across_runs(dot: Path) -> None:
    first = tier(load_plan(dot)[1], "app").content_hash
    tool_litter(dot.parent)  # a run wrote records, a venv appeared, doit saved its database
    assert tier(load_plan(dot)[1], "app").content_hash == first
    tool_litter(dot.parent)
    assert tier(load_plan(dot)[1], "app").content_hash == first


def test_a_pattern_cannot_bring_the_tool_back(dot: Path) -> None:
    tool_litter(dot.parent)
    (dot.parent / ".dockerignore").write_text("!build\n!.venv\n")
    text = DOT.replace('context = ["."]', 'context = ["."]\nexclude = ["!build", "!.venv"]')
    sent = [
        name for name, _ in tier(plan(load(write_manifest(dot.parent, text))), "app").context_files
    ]
    assert not [name for name in sent if tool_owned(name)]


@pytest.mark.parametrize("entry", ["build", "build/default", ".venv", "./build", ".doit.db"])
def test_naming_a_tool_folder_is_a_keyed_error(dot: Path, entry: str) -> None:
    tool_litter(dot.parent)
    with pytest.raises(ConfigError) as caught:
        plan(load(write_manifest(dot.parent, DOT.replace('["."]', f'["{entry}"]'))))
    [issue] = caught.value.issues
    assert issue.file == dot and issue.key == "tiers.app.context"
    assert "is build-graph's own" in issue.message


def test_the_rule_is_about_the_manifests_folder_only(tmp_path: Path) -> None:
    """A user's own folder called build/ deeper down is theirs to send."""
    (tmp_path / "docs" / "build").mkdir(parents=True)
    (tmp_path / "docs" / "build" / "index.html").write_text("<p>\n")
    assert [n for n, _ in context_files(tmp_path, ["docs"])] == ["docs/build/index.html"]


def test_a_local_source_is_hashed_and_copied_alike(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "c.sh.j2").write_text("#!/bin/sh\n")
    (tmp_path / "ext.c").write_text("int a;\n")
    (tmp_path / "pkg.egg-info").mkdir()
    (tmp_path / "pkg.egg-info" / "PKG-INFO").write_text("x\n")
    manifest = write_manifest(
        tmp_path,
        MINIMAL
        + """
        [tiers.ext]
        from = "debian:bookworm-slim"
        template = "python-runtime.Dockerfile.j2"
        compile = { builder = "base", script = "c.sh.j2", sources = { all = "." } }
        """,
    )
    tool_litter(tmp_path)
    listed = [name for name, _ in source_files(tmp_path, ".")]
    assert "ext.c" in listed and not [n for n in listed if tool_owned(n) or "egg-info" in n]
    stack = load(manifest)
    ext = tier(plan(stack), "ext")
    src = ext.folder.staged_sources
    stage_sources(stack, ext)
    copied = sorted(p.relative_to(src / "all").as_posix() for p in src.rglob("*") if p.is_file())
    assert copied == sorted(listed)


def test_chmod_of_a_context_file_replans(dot: Path) -> None:
    script = dot.parent / "run.sh"
    script.write_text("#!/bin/sh\n")
    before = tier(load_plan(dot)[1], "app").content_hash
    script.chmod(0o755)  # no mtime, no size changes: only the mode
    assert tier(load_plan(dot)[1], "app").content_hash != before


def test_two_manifests_in_one_folder_each_plan_their_own_stack(tmp_path: Path) -> None:
    one = write_manifest(tmp_path, MINIMAL)
    other = tmp_path / "images-other.toml"
    other.write_text(
        MINIMAL.replace('name = "demo"', 'name = "other"').replace("[tiers.base]", "[tiers.solo]")
    )
    for _ in range(2):  # planned afresh, then from each one's cache
        stack, planned = load_plan(one)
        assert stack.name == "demo" and [t.spec.name for t in planned] == ["base"]
        stack, planned = load_plan(other)
        assert stack.name == "other" and [t.spec.name for t in planned] == ["solo"]
    assert cache.cache_path(one) != cache.cache_path(other)


def test_a_cache_file_of_another_manifest_is_not_used(tmp_path: Path) -> None:
    one = write_manifest(tmp_path, MINIMAL).resolve()
    other = (tmp_path / "images-other.toml").resolve()
    shutil.copy(one, other)
    load_plan(one)
    cache.cache_path(other).parent.mkdir(parents=True)
    shutil.copy(cache.cache_path(one), cache.cache_path(other))
    assert cache._read(cache.cache_path(other), other) is None
    assert cache._read(cache.cache_path(one), one) is not None


def test_a_symlink_to_a_file_that_is_never_sent_is_refused(dot: Path) -> None:
    (dot.parent / ".env").write_text("TOKEN=s3cret\n")
    (dot.parent / "sub").mkdir()
    (dot.parent / "sub" / "settings").symlink_to("../.env")
    with pytest.raises(ContextError, match=r"sub/settings is a symlink to \.env"):
        context_files(dot.parent, ["sub"])


def test_a_file_named_outright_obeys_the_excludes(dot: Path) -> None:
    (dot.parent / ".env").write_text("TOKEN=s3cret\n")
    (dot.parent / "notes.md").write_text("x\n")
    with pytest.raises(ContextError, match="is never sent"):
        context_files(dot.parent, [".env"])
    with pytest.raises(ContextError, match="is never sent"):
        context_files(dot.parent, ["notes.md"], excludes=["*.md"])


def test_a_nested_stacks_build_folder_is_never_sent(dot: Path) -> None:
    nested = dot.parent / "sub"
    nested.mkdir()
    write_manifest(nested, MINIMAL)
    load_plan(nested / "images.toml")  # the nested stack's own build/ appears
    (nested / "build" / "default").mkdir(parents=True, exist_ok=True)
    (nested / "build" / "default" / "push.json").write_text("{}\n")
    sent = [name for name, _ in context_files(dot.parent, ["."])]
    assert sent and not [n for n in sent if n.startswith("sub/build/")], sent


def test_a_variant_may_not_take_a_folder_name_of_the_tool(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, MINIMAL + "\n[variants.sources]\n[variants.a]\n")
    with pytest.raises(ConfigError) as caught:
        load(manifest)
    assert "variants.sources" in str(caught.value) and "rename the variant" in str(caught.value)
