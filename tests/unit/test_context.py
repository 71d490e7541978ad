"""What a build sees: confined to the manifest's folder, excludes honoured, and a plan that
notices new files (not only edits of files it knew)."""

from __future__ import annotations

from pathlib import Path

import pytest

from build_graph.docker.build_context import without_mounts
from build_graph.errors import ConfigError
from build_graph.manifest.values import source_kind, split_git_source
from build_graph.plan import cache
from build_graph.plan.cache import load_plan
from build_graph.plan.context import context_files
from build_graph.plan.plan import plan
from tests.helpers import MINIMAL, REPO, load_text, one_error, write_manifest

STACK = (
    MINIMAL
    + """
[tiers.app]
parent = "base"
template = "training.Dockerfile.j2"
context = ["app"]
"""
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("print('hi')\n")
    write_manifest(tmp_path, STACK)
    return tmp_path


def app_hash(folder: Path) -> str:
    _, planned = load_plan(folder / "images.toml")
    return next(t.content_hash for t in planned if t.spec.name == "app")


def sent(folder: Path) -> list[str]:
    planned = plan(
        load_text(
            folder, STACK.replace('context = ["app"]', 'context = ["app"]\nexclude = ["**/*.log"]')
        )
    )
    return [name for name, _ in next(t for t in planned if t.spec.name == "app").context_files]


@pytest.mark.parametrize("entry", ["/etc/passwd", "../outside", "app/../../x"])
def test_entries_outside_the_manifest_folder_are_keyed_errors(folder: Path, entry: str) -> None:
    text = STACK.replace('context = ["app"]', f'context = ["{entry}"]')
    message = one_error(folder, text, "tiers.app.context.0")
    assert "is not a valid context path" in message and "no '..'" in message


def test_a_symlink_that_leaves_the_folder_is_refused(folder: Path) -> None:
    (folder / "hostfiles").symlink_to("/etc")
    text = STACK.replace('context = ["app"]', 'context = ["hostfiles"]')
    assert "leads to /etc, outside the manifest's folder" in one_error(
        folder, text, "tiers.app.context"
    )
    (folder / "app" / "passwd").symlink_to("/etc/passwd")
    with pytest.raises(ConfigError) as caught:
        plan(load_text(folder, STACK))
    [issue] = caught.value.issues
    assert issue.key == "tiers.app.context"
    assert "app/passwd is a symlink to /etc/passwd" in issue.message


def test_git_env_dockerignore_and_tier_excludes_are_neither_sent_nor_hashed(folder: Path) -> None:
    app = folder / "app"
    (app / ".git").mkdir()
    (app / ".git" / "config").write_text("[remote] url = https://token@host/x\n")
    (app / ".env").write_text("TOKEN=secret\n")
    (app / "data").mkdir()
    (app / "data" / "big.bin").write_bytes(b"0" * 10)
    (app / "data" / "keep.txt").write_text("kept\n")
    (app / "run.log").write_text("log\n")
    (app / ".dockerignore").write_text("# comment\ndata\n!data/keep.txt\n")
    assert sent(folder) == ["app/data/keep.txt", "app/main.py"]
    before = app_hash(folder)
    (app / ".env").write_text("TOKEN=other\n")
    (app / "data" / "big.bin").write_bytes(b"1" * 10)
    assert app_hash(folder) == before  # excluded files never rebuild anything


def test_an_unchanged_stack_is_served_from_the_plan_cache(folder: Path) -> None:
    """The cache must hit when nothing changed (it once re-expanded its own file list and
    never matched: every no-op run planned afresh)."""
    manifest = (folder / "images.toml").resolve()
    load_plan(manifest)
    cached = cache._read(cache.cache_path(manifest), manifest)
    assert cached is not None
    (folder / "app" / "new.py").write_text("x = 1\n")
    assert cache._read(cache.cache_path(manifest), manifest) is None


def test_a_new_file_in_a_context_folder_changes_the_plan(folder: Path) -> None:
    before = app_hash(folder)
    assert app_hash(folder) == before  # served from the plan cache
    (folder / "app" / "sub").mkdir()
    (folder / "app" / "sub" / "new.py").write_text("x = 1\n")
    assert app_hash(folder) != before


def test_a_new_template_override_changes_the_plan(folder: Path) -> None:
    _, planned = load_plan(folder / "images.toml")
    (folder / "templates").mkdir()
    (folder / "templates" / "training.Dockerfile.j2").write_text(
        "FROM {{ base_image }}\nRUN echo overridden\n"
    )
    _, replanned = load_plan(folder / "images.toml")
    old, new = (next(t for t in p if t.spec.name == "app") for p in (planned, replanned))
    assert "overridden" in new.dockerfile and new.content_hash != old.content_hash


def test_a_new_file_in_a_compile_source_changes_the_compile_hash(tmp_path: Path) -> None:
    (tmp_path / "src" / "ext").mkdir(parents=True)
    (tmp_path / "src" / "ext" / "a.c").write_text("int a;\n")
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "c.sh.j2").write_text("#!/bin/sh\necho build\n")
    write_manifest(
        tmp_path,
        MINIMAL
        + """
        [tiers.ext]
        from = "debian:bookworm-slim"
        template = "python-runtime.Dockerfile.j2"
        compile = { builder = "base", script = "c.sh.j2", sources = { ext = "src/ext" } }
        """,
    )
    _, planned = load_plan(tmp_path / "images.toml")
    (tmp_path / "src" / "ext" / "b.c").write_text("int b;\n")
    _, replanned = load_plan(tmp_path / "images.toml")
    old, new = (next(t for t in p if t.spec.name == "ext") for p in (planned, replanned))
    assert new.compile_hash != old.compile_hash


@pytest.mark.parametrize(
    ("source", "accepted"),
    [
        ("https://github.com/pytorch/pytorch@v2.6.0", True),
        ("ssh://git@host/team/repo@main", True),
        ("https://host/repo;touch pwned", False),
        ("https://host/$(id)@main", False),
        ("https://host/repo@--upload-pack=x", False),
        ("file:///etc", False),
        ("https://files.pythonhosted.org/p/a-1.0.tar.gz#sha256=" + "ab" * 32, True),
        ("https://host/a-1.0.zip#sha256=" + "0" * 64, True),
        ("https://host/a-1.0.tar.gz#sha256=abc", False),  # not a whole sha256
        ("https://host/a-1.0.tar.gz#sha256=" + "AB" * 32, False),  # pip writes lower case
        ("https://host/a;id.tar.gz#sha256=" + "0" * 64, False),
        ("http://host/a-1.0.tar.gz#sha256=" + "0" * 64, False),  # https only
        ("https://host/a-1.0.exe#sha256=" + "0" * 64, False),
    ],
)
def test_compile_source_urls_have_a_grammar(tmp_path: Path, source: str, accepted: bool) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "c.sh.j2").write_text("#!/bin/sh\n")
    text = (
        MINIMAL
        + f"""
        [tiers.ext]
        from = "debian:bookworm-slim"
        template = "python-runtime.Dockerfile.j2"
        compile = {{ builder = "base", script = "c.sh.j2", sources = {{ s = "{source}" }} }}
        """
    )
    if accepted:
        load_text(tmp_path, text)
    else:
        message = one_error(tmp_path, text, "tiers.ext.compile.sources.s")
        assert "is not a source URL" in message or "is not an archive URL" in message


@pytest.mark.parametrize(
    ("source", "kind", "split"),
    [
        ("src/ext", "local", None),
        (
            "https://github.com/pytorch/pytorch@v2.6.0",
            "git",
            ("https://github.com/pytorch/pytorch", "v2.6.0"),
        ),
        ("https://host/repo", "git", ("https://host/repo", "HEAD")),
        ("ssh://git@host/team/repo", "git", ("ssh://git@host/team/repo", "HEAD")),  # a user
        (
            "ssh://git@host/team/repo@release/2.6",
            "git",
            ("ssh://git@host/team/repo", "release/2.6"),
        ),
        ("https://host/a-1.tar.gz#sha256=" + "0" * 64, "archive", None),
    ],
)
def test_sources_are_told_apart_and_git_refs_split_after_the_host(
    source: str, kind: str, split: tuple[str, str] | None
) -> None:
    assert source_kind(source) == kind
    if split is not None:
        assert split_git_source(source) == split


def test_docker_pattern_syntax(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("a/x.log", "a/b/c/x.log", "a/keep.log", "a/b/x.txt", "top.log"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    monkeypatch.chdir(tmp_path)  # never left behind: later tests run doit from the repository
    files = [n for n, _ in context_files(tmp_path, ["a", "top.log"], ["a/**/*.log", "!a/keep.log"])]
    assert files == ["a/b/x.txt", "a/keep.log", "top.log"]


def test_the_classic_builder_gets_runs_without_mounts_and_caches_emptied() -> None:
    dockerfile = (
        "FROM x\n"
        "RUN --mount=type=secret,id=pipconf,target=/etc/pip.conf "
        "--mount=type=cache,target=/root/.cache/pip,sharing=locked python3 -m pip install a \\\n"
        " && echo done\n"
        "RUN --mount=type=secret,id=s echo plain\n"
        "RUN echo untouched\n"
    )
    assert without_mounts(dockerfile) == (
        "FROM x\n"
        "RUN python3 -m pip install a \\\n && echo done \\\n && rm -rf /root/.cache/pip/*\n"
        "RUN echo plain\n"
        "RUN echo untouched\n"
    )


def test_the_classic_builder_copies_a_bind_mounted_folder_in_and_removes_it() -> None:
    """The runtime template bind-mounts the compiled wheels; the classic builder knows no
    mounts, so it gets them by COPY and removes them in the step that installs them."""
    dockerfile = (
        "FROM x\n"
        "RUN --mount=type=bind,source=wheels,target=/tmp/wheels "
        "--mount=type=cache,target=/root/.cache/pip,sharing=locked "
        "python3 -m pip install --no-deps /tmp/wheels/*.whl\n"
    )
    assert without_mounts(dockerfile) == (
        "FROM x\n"
        "COPY wheels/ /tmp/wheels/\n"
        "RUN python3 -m pip install --no-deps /tmp/wheels/*.whl \\\n"
        " && rm -rf /root/.cache/pip/* /tmp/wheels\n"
    )


def test_the_shipped_runtime_template_installs_its_wheels_on_the_classic_builder() -> None:
    from build_graph.manifest.load import load
    from build_graph.plan.plan import plan

    planned = plan(load(REPO / "examples" / "quickstart" / "images.toml"))
    fastext = next(p for p in planned if p.key == "fastext")
    classic = without_mounts(fastext.dockerfile)
    assert "--mount" not in classic
    copy = classic.index("COPY wheels/ /tmp/wheels/")
    assert classic.index("pip install --no-cache-dir --no-deps /tmp/wheels/*.whl") > copy


def test_the_classic_builder_installs_the_locked_debs_without_mounts_or_network_flags() -> None:
    """A locked apt step bind-mounts the gathered .debs and runs with --network=none; the
    classic builder knows neither, so it copies the folder in and removes it in the step."""
    from build_graph.manifest.load import load
    from build_graph.plan.plan import plan

    planned = plan(load(REPO / "examples" / "quickstart" / "images.toml"))
    fastext = next(p for p in planned if p.key == "fastext")
    assert "--network=none" in fastext.dockerfile
    classic = without_mounts(fastext.dockerfile)
    assert "--mount" not in classic and "--network" not in classic
    copy = classic.index("COPY debs/ /tmp/debs/")
    install = classic.index("apt-get install -y --no-install-recommends /tmp/debs/")
    assert copy < install and "rm -rf /tmp/debs" in classic[install:]
