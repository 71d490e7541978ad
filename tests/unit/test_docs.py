"""The README stays short and keeps its two commands; the design page names every module.

Links and anchors are checked by the docs build (scripts/docs.sh, in CI), not here.
"""

from __future__ import annotations

import re

from tests.helpers import REPO

README = REPO / "README.md"
DESIGN = REPO / "docs" / "design.md"


def test_the_readme_is_read_in_ten_minutes() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move detail into docs/"


def test_the_readme_quickstart_is_the_two_commands_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M)
    commands = [[line.split()[0] for line in block.splitlines()] for block in blocks]
    assert ["scripts/quickstart.sh", "scripts/test.sh"] in commands
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    # the last phase (`phase NAME COMMAND`, which times it) is the README's test command
    assert ci[-1].split()[-1] == "scripts/test.sh", ".ci/run must end in the README's test command"
    assert ci[-1] in ("scripts/test.sh", "phase tests scripts/test.sh"), ci[-1]


def test_the_design_page_names_every_module() -> None:
    page = DESIGN.read_text(encoding="utf-8")
    package = REPO / "build_graph"
    missing = [
        str(path.relative_to(package))
        for path in sorted(package.rglob("*.py"))
        if path.name != "__init__.py" and f"`{path.relative_to(package).as_posix()}`" not in page
    ]
    assert not missing, f"docs/design.md, 'Every module': add {missing}"
