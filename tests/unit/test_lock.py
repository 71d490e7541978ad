"""images.lock as data: read and written back, a pin in the hash and the FROM line."""

from __future__ import annotations

from pathlib import Path

import pytest

from build_graph.errors import ConfigError
from build_graph.plan.lock import LOCAL, Lock, from_images, lock_path, read_lock, write_lock
from build_graph.plan.plan import plan
from tests.helpers import MINIMAL, load_text, write_manifest

DIGEST_A = "sha256:" + "a" * 64
DIGEST_B = "sha256:" + "b" * 64
STACK = (
    MINIMAL
    + """
[tiers.other]
from = "127.0.0.1:5000/ext/py:1"
template = "python-runtime.Dockerfile.j2"

[tiers.child]
parent = "other"
template = "training.Dockerfile.j2"
"""
)


def hashes(folder: Path) -> dict[str, tuple[str, str]]:
    """tier -> (content hash, FROM line)."""
    return {
        t.spec.name: (
            t.content_hash,
            next(line for line in t.dockerfile.splitlines() if line.startswith("FROM ")),
        )
        for t in plan(load_text(folder, STACK))
    }


def test_round_trip_and_a_damaged_file(tmp_path: Path) -> None:
    path = tmp_path / "images.lock"
    assert read_lock(path) == Lock()
    pins = Lock(
        {"debian:bookworm-slim": LOCAL, "127.0.0.1:5000/ext/py:1": DIGEST_A},
        {"https://host/repo@main": "c" * 40},
    )
    write_lock(path, pins)
    assert read_lock(path) == pins
    path.write_text("[from\n")
    with pytest.raises(ConfigError) as caught:
        read_lock(path)
    assert "not valid TOML" in str(caught.value)
    assert "run `python -m build_graph lock --update`" in str(caught.value)


def test_a_pin_is_in_the_hash_and_the_from_line_and_moves_only_its_tiers(tmp_path: Path) -> None:
    write_manifest(tmp_path, STACK)
    unpinned = hashes(tmp_path)
    assert from_images(load_text(tmp_path, STACK)) == [
        "debian:bookworm-slim",
        "127.0.0.1:5000/ext/py:1",
    ]
    lock = lock_path(tmp_path / "images.toml")
    write_lock(lock, Lock({"debian:bookworm-slim": LOCAL, "127.0.0.1:5000/ext/py:1": DIGEST_A}))
    first = hashes(tmp_path)
    assert first["other"][1] == f"FROM 127.0.0.1:5000/ext/py:1@{DIGEST_A}"
    assert first["base"][1] == "FROM debian:bookworm-slim"  # local: not pinned, named
    assert first["child"][0] != unpinned["child"][0]
    write_lock(lock, Lock({"debian:bookworm-slim": LOCAL, "127.0.0.1:5000/ext/py:1": DIGEST_B}))
    moved = hashes(tmp_path)
    assert moved["base"] == first["base"]  # another image's pin moved: base untouched
    assert moved["other"][0] != first["other"][0] and moved["child"][0] != first["child"][0]


def test_a_git_source_pin_is_in_the_compile_hash_and_the_script(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "c.sh.j2").write_text(
        "#!/bin/sh\n{% for n, s in compile.sources | dictsort %}"
        "echo {{ n }} {{ compile.commits[n] }}\n{% endfor %}"
    )
    text = (
        MINIMAL
        + """
        [tiers.ext]
        from = "debian:bookworm-slim"
        template = "python-runtime.Dockerfile.j2"
        compile = { builder = "base", script = "c.sh.j2", sources = { lib = "git://h/r@main" } }
        """
    )
    manifest = write_manifest(tmp_path, text)

    def ext(commit: str | None) -> tuple[str | None, str | None]:
        if commit:
            write_lock(lock_path(manifest), Lock(sources={"git://h/r@main": commit}))
        tier = next(t for t in plan(load_text(tmp_path, text)) if t.spec.name == "ext")
        return tier.compile_hash, tier.script

    unpinned, first, moved = ext(None), ext("a" * 40), ext("b" * 40)
    assert first[1] is not None and f"echo lib {'a' * 40}" in first[1]
    assert len({unpinned[0], first[0], moved[0]}) == 3
