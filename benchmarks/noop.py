"""No-op run of the quickstart: `doit` vs the naive script (one cached `docker build` per tier).

Run after a full quickstart run (scripts/quickstart.sh). Prints medians and their ratio;
both are measured in this one run, side by side, since these machines are noisy. Takes
about 75 s on 2 cores (7 runs of each, after one warm-up of the naive script).

`--floor` needs no engine and no registry: the imports of what dodo.py imports, side by side
with `python -c "import doit"` (issue 41's floor: within 0.1 s), alternating runs. The
package's bytecode is written first, as an install does: a checkout run with
PYTHONDONTWRITEBYTECODE=1 compiles every module on every start and times the compiler.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import REPO, count, doit_command, timed

from build_graph import settings
from build_graph.docker import buildkit
from build_graph.manifest.load import load
from build_graph.plan.plan import plan


def naive_script(manifest: Path, folder: Path) -> Path:
    """A shell script of one `docker build` per tier, each with its full context, as teams
    write them by hand: every run re-sends every context and asks the daemon."""
    lines = ["#!/bin/sh", "set -e"]
    command = buildkit.cli()  # the same builder as ours: the templates use RUN --mount
    if command is None:
        raise SystemExit("no BuildKit here: the naive script could not build these templates")
    builder = " ".join(shlex.quote(part) for part in command)
    for tier in plan(load(manifest)):
        ctx = folder / tier.key
        ctx.mkdir(parents=True)
        (ctx / "Dockerfile").write_text(tier.dockerfile)
        for name, path in tier.context_files:
            (ctx / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, ctx / name)
        if tier.spec.compile is not None:
            shutil.copytree(tier.folder.wheels, ctx / "wheels")
        # The same settings our builds get (settings.for_build): plain ones as build args,
        # the host's CA bundle (and a credentialed pip.conf) as secrets, which the
        # templates' pip steps mount; without them pip fails TLS behind an intercepting proxy.
        build_args, secrets = settings.for_build(buildkit=True)
        args = "".join(f" --build-arg {k}={shlex.quote(v)}" for k, v in build_args.items())
        for name, value in secrets.items():
            secret_file = folder / f"secret-{name}"
            secret_file.write_text(value)
            secret_file.chmod(0o600)
            args += f" --secret id={name},src={shlex.quote(str(secret_file))}"
        lines.append(
            f"DOCKER_BUILDKIT=1 {builder} -q --network=host{args} "
            f"-t {tier.image}-naive {ctx} >/dev/null"
        )
    script = folder / "naive.sh"
    script.write_text("\n".join(lines) + "\n")
    return script


# What dodo.py imports before doit asks for a task.
DODO_IMPORTS = "import build_graph.run.session, build_graph.run.tasks"


def floor(runs: int) -> None:
    """Median wall time of importing what dodo.py imports against `import doit`, the two in
    turn, run by run; their difference and ratio."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO / "build_graph")], check=True
    )
    ours, doit = [], []
    for _ in range(runs + 1):  # the first pair warms the disk cache
        ours.append(timed([sys.executable, "-c", DODO_IMPORTS], 1)[0])
        doit.append(timed([sys.executable, "-c", "import doit"], 1)[0])
    a, b = statistics.median(ours[1:]), statistics.median(doit[1:])
    print(f"no-op imports, median of {runs} pairs:")
    print(f"  {DODO_IMPORTS}: {a:.3f} s")
    print(f"  import doit: {b:.3f} s")
    print(f"  difference {a - b:.3f} s (floor: 0.1 s), ratio {a / b:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--manifest", type=Path, default=REPO / "examples" / "quickstart" / "images.toml"
    )
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--floor", action="store_true", help="the import floor only")
    args = parser.parse_args()
    if args.floor:
        floor(args.runs)
        return
    manifest = args.manifest.resolve()
    ours, output = timed(doit_command(manifest), 1)  # make sure everything is done
    with tempfile.TemporaryDirectory() as tmp:
        script = naive_script(manifest, Path(tmp))
        timed(["sh", str(script)], 1)  # warm the naive script's layer cache
        naive, _ = timed(["sh", str(script)], args.runs)
    ours, output = timed(doit_command(manifest), args.runs)
    tiers = len(plan(load(manifest)))
    print(f"quickstart no-op ({tiers} tiers, median of {args.runs}):")
    print(
        f"  doit (render..promote, all up to date):  {ours:.3f} s "
        f"[{count(output, 'ok    build:')} build tasks run, "
        f"{count(output, 'ok    push:')} push tasks run]"
    )
    print(f"  naive cached docker build per tier:      {naive:.3f} s")
    print(f"  ratio doit/naive: {ours / naive:.2f}")


if __name__ == "__main__":
    main()
