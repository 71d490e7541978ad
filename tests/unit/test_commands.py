"""`doit list` shows the tiers; stage task names still work; reserved tier names refused.

These run doit itself (a subprocess from the repository root, where pyproject.toml
registers the commands); `list` without --status asks neither Docker nor the registry.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import MINIMAL, doit, one_error, write_manifest

STACK = (
    MINIMAL
    + """
[tiers.app]
parent = "base"
template = "training.Dockerfile.j2"
description = "the app"
"""
)


def test_list_is_one_line_per_tier(tmp_path: Path) -> None:
    result = doit(write_manifest(tmp_path, STACK), "list")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "base  from debian:bookworm-slim  python 3.11",
        "app   on base                    python 3.11",
    ]


def test_list_all_keeps_the_stage_task_names(tmp_path: Path) -> None:
    result = doit(write_manifest(tmp_path, STACK), "list", "--all")
    names = [line.split()[0] for line in result.stdout.splitlines()]
    for stage in ("render", "build", "push", "verify", "promote"):
        assert f"{stage}:app" in names and f"{stage}:base" in names
    assert "app" in names and "base" in names


def test_variants_get_a_task_per_variant_and_one_for_all(tmp_path: Path) -> None:
    text = STACK + '\n[variants.a]\n[variants.b]\nversions = { python = "3.12" }\n'
    result = doit(write_manifest(tmp_path, text), "list", "--all")
    names = [line.split()[0] for line in result.stdout.splitlines()]
    assert {"app", "app@a", "app@b", "promote:app@b"} <= set(names)
    listed = doit(write_manifest(tmp_path, text), "list").stdout.splitlines()
    assert listed[-1].split() == ["app@b", "on", "base@b", "python", "3.12"]


def test_info_on_an_unknown_name_is_one_line_with_a_suggestion(tmp_path: Path) -> None:
    result = doit(write_manifest(tmp_path, STACK), "info", "ap")
    assert result.returncode == 3  # doit's code for a command line it cannot follow
    assert "no tier or task named 'ap' (did you mean 'app'?)" in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_a_tier_named_like_a_stage_or_command_is_refused(tmp_path: Path) -> None:
    text = MINIMAL.replace("[tiers.base]", "[tiers.list]")
    assert "'list' is a doit command" in one_error(tmp_path, text, "tiers.list")
