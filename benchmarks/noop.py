"""No-op run of the quickstart: `doit` vs the naive script (one cached `docker build` per tier).

Run after a full quickstart run (scripts/quickstart.sh). Prints medians and their ratio;
both are measured in this one run, side by side, since these machines are noisy. Takes
about 75 s on 2 cores (7 runs of each, after one warm-up of the naive script).
"""

from __future__ import annotations

import argparse
import shlex
import shutil
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--manifest", type=Path, default=REPO / "examples" / "quickstart" / "images.toml"
    )
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
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
