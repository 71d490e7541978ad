"""`python -m build_graph init [DIR] --from quickstart|cuda|from-source`: a stack in a
team's own repository, ready for `doit`.

The scaffolds are this repository's examples, shipped in the wheel as package data
(pyproject.toml maps examples/ to build_graph/examples, as templates/ to
build_graph/templates), so what `init` writes is what the examples' tests build. Written:
the example's images.toml and the files its tiers name (context, compile sources, its own
templates); a dodo.py that imports the installed package (the same file as this
repository's: tests/unit/test_init.py keeps them equal) and the doit.cfg that makes
`doit list`/`doit info` speak in tiers; templates/ for overrides; a .gitignore line for the
tool's build folder. Not written: the example's images.lock (pins are the team's to record:
the first `doit` records them, one line each) and any state of this checkout (build
folders, caches).

Nothing is overwritten: a folder that already holds a file `init` would write is refused,
every such file named, before anything is written (exit 2).
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from build_graph.errors import ConfigError, ConfigIssue
from build_graph.layout import DEFAULT_MANIFEST, OWN_FOLDER
from build_graph.plan.lock import lock_path

# --from NAME -> the example folder it copies. from-source is the real stack of this
# repository's images.toml (PyTorch compiled from source), kept with its team code in
# examples/team so that it ships (tests/unit/test_init.py keeps the two manifests equal).
SCAFFOLDS: dict[str, str] = {"quickstart": "quickstart", "cuda": "cuda", "from-source": "team"}
# Never copied: a run's state, interpreter caches and pins (the team's machines record their
# own, from their registry). Everything else is written byte for byte, hidden files too (an
# example's src/fastext/.gitignore is in its hash): pyproject.toml's package-data ships them.
_SKIPPED = ("__pycache__", "*.egg-info", "*.pyc")  # at any depth
# Only beside the manifests: the stack's build folder and each manifest's pins, NAME.lock
# beside NAME.toml (a context's own build/ or a uv.lock is the team's code, and in its hash).

DODO = '''\
"""doit entry point: `doit` builds, pushes, verifies and promotes the stack in images.toml.

`doit manifest=PATH` picks another manifest; `doit list` shows the tiers, `doit list
--status` the plan; `doit info <tier>` says why it would run. This file only hands doit the
stack's tasks (build_graph.stages.pipeline declares the stages), so it stays the same when a
release adds a stage.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from doit import get_var

from build_graph.run.session import open_session
from build_graph.run.tasks import doit_config

_TASKS = open_session(get_var("manifest"), verbose=get_var("verbose"))
DOIT_CONFIG: dict[str, Any] = doit_config(_TASKS.stack)


def task_stack() -> Iterator[dict[str, Any]]:
    """Every task of the stack: `doit <tier>` and each stage's (their own basenames)."""
    yield from _TASKS.all()
'''


# doit reads its command plugins from the current folder (doit.cfg beside pyproject.toml,
# which a team's repository may have for its own use): without these, `doit list` and
# `doit info` are doit's own, not the tiers. The same lines as pyproject.toml's
# [tool.doit.plugins.command] (tests/unit/test_init.py keeps them equal).
DOIT_CFG = """\
[COMMAND]
list = build_graph.run.commands:TierList
info = build_graph.run.commands:TierInfo
"""


def add_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "folder", nargs="?", type=Path, default=Path(), help="where (default: the current folder)"
    )
    command.add_argument(
        "--from",
        dest="source",
        required=True,
        choices=list(SCAFFOLDS),
        help="quickstart: a CPU stack that builds anywhere; cuda: CUDA 13 "
        "from PyPI wheels and CUDA ops compiled with ccache; "
        "from-source: PyTorch compiled from source for your GPUs",
    )


def run(args: argparse.Namespace) -> int:
    for line in init(args.folder, args.source):
        print(line)
    return 0


def shipped_examples() -> Path:
    """The examples: package data beside the templates in an installed wheel, else the
    checkout's examples/ (a source tree, an editable install)."""
    from build_graph.manifest.resolve import shipped_templates  # pydantic: not for `--help`

    folder = shipped_templates().parent / "examples"  # both lie beside the templates
    if not folder.is_dir():
        raise FileNotFoundError(f"no {folder}: reinstall build-graph")
    return folder


def _templates_readme(own: list[str]) -> str:
    from build_graph.manifest.resolve import shipped_templates

    shipped = sorted(p.name for p in shipped_templates().glob("*.j2"))
    lines = [
        "# Templates of this stack",
        "",
        "A template here is used instead of the shipped one of the same name (the tier's",
        "`template` or `compile.script` in images.toml names it); copy one from the",
        "installed package (build_graph/templates/) to change it. A change re-renders,",
        "and rebuilds exactly the tiers whose Dockerfile changed.",
        "",
        "Shipped: " + ", ".join(shipped) + ".",
    ]
    if own:
        lines += ["", "This stack's own: " + ", ".join(own) + "."]
    return "\n".join(lines) + "\n"


def _plan_files(example: Path) -> dict[Path, str | Path]:
    """Relative path -> text to write or file to copy."""
    files: dict[Path, str | Path] = {}
    ignore = shutil.ignore_patterns(*_SKIPPED)

    pins = {lock_path(p).name for p in example.glob("*.toml")}

    def walk(folder: Path, rel: Path) -> None:
        names = sorted(p.name for p in folder.iterdir())
        skipped = ignore(str(folder), names) | ({OWN_FOLDER, *pins} if rel == Path() else set())
        for name in sorted(set(names) - skipped):
            path = folder / name
            if path.is_dir():
                walk(path, rel / name)
            elif path.is_file():
                files[rel / name] = path

    walk(example, Path())
    own = sorted(p.name for p in files if p.parent == Path("templates"))
    files[Path("dodo.py")] = DODO
    files[Path("doit.cfg")] = DOIT_CFG
    files[Path("templates") / "README.md"] = _templates_readme(own)
    return files


def init(folder: Path, source: str) -> list[str]:
    """Write the scaffold `source` into `folder`; the lines saying what was written.
    Raises ConfigError (exit 2) naming every file that is in the way; writes nothing then."""
    example = shipped_examples() / SCAFFOLDS[source]
    files = _plan_files(example)
    in_the_way = [folder / rel for rel in files if _taken(folder, folder / rel)]
    gitignore = folder / ".gitignore"
    if gitignore.is_symlink() or not _stays_inside(folder, gitignore):
        in_the_way.append(gitignore)
    if in_the_way:
        raise ConfigError(
            ConfigIssue(
                path,
                "",
                "exists already (or is a symlink, or leads out "
                "of the folder): `init` never overwrites and writes only "
                "inside DIR; pick an empty folder or move it away",
            )
            for path in in_the_way
        )
    for rel, content in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.read_bytes() if isinstance(content, Path) else content.encode()
        # O_EXCL|O_NOFOLLOW: a file or link that appeared since the check is never written
        # through (a link could point anywhere on this host).
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
    ignored = _ignore_build_folder(folder / ".gitignore")
    return [
        f"wrote {folder / DEFAULT_MANIFEST} and {len(files) - 1} more files (the {source} stack)",
        ignored,
        f"next: set [stack] registry in {folder / DEFAULT_MANIFEST}, then "
        f"cd {folder} && doit list --status; `doit` builds (commit images.lock once "
        "the first run has recorded it)",
    ]


def _taken(folder: Path, path: Path) -> bool:
    """Whether writing `path` could overwrite something or leave `folder`: it exists (a
    dangling symlink too), or a folder on its way is a symlink or leads elsewhere."""
    return path.exists() or path.is_symlink() or not _stays_inside(folder, path)


def _stays_inside(folder: Path, path: Path) -> bool:
    real = folder.resolve()
    here = path.parent
    while True:  # every existing folder on the way must be a real folder inside `folder`
        if here == folder:
            return True
        if here.is_symlink():
            return False
        if here.exists():
            return here.resolve() == real or real in here.resolve().parents
        here = here.parent


def _ignore_build_folder(path: Path) -> str:
    """Add the build folder to .gitignore (created, or appended to a team's own)."""
    line = f"/{OWN_FOLDER}/"
    text = path.read_text() if path.exists() else ""
    if line in text.splitlines():
        return f"{path}: already ignores {line}"
    note = "# build-graph's state beside images.toml: a cache of the registry, never committed"
    path.write_text(text + ("\n" if text and not text.endswith("\n") else "") + f"{note}\n{line}\n")
    return f"{path}: ignores {line}"
