"""The CLI is a table of command modules: each adds its own options and runs; `--help` and
a command import no other command's module (nor Jinja, docker, GCS or cryptography)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from build_graph.cli import (
    check,
    ci_command,
    doctor,
    fetch,
    gate,
    graph,
    init,
    keygen,
    lock,
    outdated,
    plan,
    prune,
    reproduce,
    sbom,
    size,
)
from build_graph.cli.main import COMMANDS, Command, CommandModule, parser

# Typed as the protocol: mypy checks each module's add_options and run signatures.
MODULES: list[CommandModule] = [
    check,
    plan,
    graph,
    size,
    doctor,
    lock,
    fetch,
    ci_command,
    init,
    prune,
    outdated,
    sbom,
    reproduce,
    gate,
    keygen,
]
HEAVY = ("jinja2", "docker", "google.cloud", "cryptography", "pydantic")


def test_every_row_names_its_module_once() -> None:
    assert [c.load() for c in COMMANDS] == MODULES
    assert len({c.name for c in COMMANDS}) == len(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_a_command_alone_parses_as_in_the_whole_parser(
    command: Command, capsys: pytest.CaptureFixture[str]
) -> None:
    """`main` builds only the chosen command's options: its help is the full parser's."""
    helps = []
    for top in (parser(), parser(command.name)):
        with pytest.raises(SystemExit):
            top.parse_args([command.name, "--help"])
        helps.append(capsys.readouterr().out)
    assert helps[0] == helps[1] and "--help" in helps[0]


def imported(*argv: str) -> set[str]:
    """The modules `python -m build_graph ARGV` has imported when it exits."""
    code = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.__stderr__))\n"
        "from build_graph.cli.main import main\n"
        f"sys.exit(main({list(argv)!r}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    return set(json.loads(result.stderr.splitlines()[-1]))


def test_help_imports_no_command_module_and_nothing_heavy() -> None:
    loaded = imported("--help")
    commands = {c.module for c in COMMANDS}
    assert not loaded & commands, sorted(loaded & commands)
    assert not [m for m in loaded if m.startswith(HEAVY)]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_a_command_imports_its_own_module_only(command: Command) -> None:
    loaded = imported(command.name, "--help")
    assert {c.module for c in COMMANDS} & loaded == {command.module}
    assert not [m for m in loaded if m.startswith(HEAVY)]  # keygen's cryptography: as it runs
