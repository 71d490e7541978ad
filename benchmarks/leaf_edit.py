"""A one-line edit of the quickstart's train.py: `doit` (build, push, verify and promote of
the two tiers it moves) beside `docker buildx bake` building and pushing the same two
images from byte-identical contexts, on the same engine and registry, caches warm.

Both are set up first: the quickstart copied to a scratch folder (its own repository name
in the registry, `leafbench`) and run whole; each tier's build context, as our build sends
it (stages/build_act.sent_context: the rendered Dockerfile and its files), written out for
bake, for the two tiers the edit moves (training, and runner above it, its `FROM` given as
bake's `target:` context of training, so the edit rebuilds it as ours does; training's
`FROM` is base's image, which our run pushed); bake run once to warm its cache. So bake is
told which tiers to build, where `doit` finds them (checking the other three up to date).
Then, `--runs` times, in turn: the same edit of train.py in both, `doit` timed, `bake`
timed. Prints the medians and their ratio (issue 41's target: within 3x), how our run
spent its time per stage (the last run's timeline, from its summary), and two floors:
bake's time plus one bare container per tier (verify's probe runs in a container of each
image; what that costs before the probe does anything is the engine's), and the work each
does, as the core-seconds the whole machine was busy while it ran (/proc/stat: the engine,
registry and containers included, not only the command's own processes; so run it on an
otherwise quiet machine): work over cores is a time no scheduling can beat.

Needs scripts/services.sh up (engine, registry on 127.0.0.1:5000). Takes about 5 minutes
on 2 cores the first time (the quickstart's cold run), then about 15 s per pair.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import tarfile
import tempfile
import time
from pathlib import Path

from _common import REPO, count, doit_command, timed

from build_graph.docker import buildkit, containers
from build_graph.manifest.load import load
from build_graph.plan.plan import PlannedTier, plan
from build_graph.stages.build_act import build_settings, sent_context

EDITED = "train/train.py"
MOVED = ("training", "runner")  # the tiers the edit moves: what bake is asked to build
MARK = "# leaf edit:"


def workspace(folder: Path, registry: str) -> Path:
    root = folder / "quickstart"
    if root.exists():  # --folder of an earlier sitting: its run and caches are warm
        return root / "images.toml"
    shutil.copytree(
        REPO / "examples" / "quickstart", root, ignore=shutil.ignore_patterns("build", "gen")
    )
    manifest = root / "images.toml"
    text = manifest.read_text()
    manifest.write_text(
        text.replace('registry = "127.0.0.1:5000/quickstart"', f'registry = "{registry}/leafbench"')
    )
    return manifest


def edit(path: Path, round_: str) -> None:
    """One line of the file changed (added the first time)."""
    lines = [line for line in path.read_text().splitlines() if not line.startswith(MARK)]
    path.write_text("\n".join([*lines, f"{MARK} {round_}"]) + "\n")


def bake_file(manifest: Path, folder: Path, registry: str) -> Path:
    """Each tier's context, as our build sends it, under `folder`; bake's file over them."""
    stack = load(manifest)
    tiers = plan(stack)
    command = buildkit.cli()
    args, secrets = build_settings(command)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    secret_lines = []
    for name, value in secrets.items():
        secret = folder / f"secret-{name}"
        with os.fdopen(os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
            out.write(value)  # this user's alone from the start (the folder is made anew)
        secret_lines.append(f"id={name},src={secret}")
    targets: dict[str, object] = {}
    images = {t.image: t.key for t in tiers if t.spec.name in MOVED}
    for tier in (t for t in tiers if t.spec.name in MOVED):
        context = folder / tier.key
        with tarfile.open(
            fileobj=sent_context(stack, tier, {"bench": "leaf-edit"}, classic=False)
        ) as tar:
            tar.extractall(context, filter="data")
        parent = _parent_ref(tier)
        targets[tier.key] = {
            "context": str(context),
            "dockerfile": "Dockerfile",
            "args": args,
            "secret": secret_lines,
            "network": "host",
            "tags": [f"{registry}/leafbench-bake/{tier.spec.name}:edit"],
            "output": ["type=registry"],
            **({"contexts": {parent: f"target:{images[parent]}"}} if parent in images else {}),
        }
    path = folder / "bake.json"
    path.write_text(
        json.dumps({"group": {"default": {"targets": list(targets)}}, "target": targets})
    )
    return path


def _parent_ref(tier: PlannedTier) -> str:
    return next(
        line.split()[1] for line in tier.dockerfile.splitlines() if line.startswith("FROM ")
    )


def busy_cpu() -> float:
    """Core-seconds this machine has been busy since it started: /proc/stat's first line,
    every state but idle and iowait (guest time is already in user)."""
    ticks = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def measured(command: list[str]) -> tuple[float, float, str]:
    """One run of `command`: wall seconds, the core-seconds the machine was busy meanwhile,
    and its output."""
    before = busy_cpu()
    seconds, output = timed(command, 1)
    return seconds, busy_cpu() - before, output


def bare_container(image: str, runs: int) -> float:
    """Median seconds of one container of `image` that runs `python3 -c pass`, made, started,
    followed and removed as verify's probe is (docker/containers.py): what each verified
    tier costs before the probe does anything."""
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        with containers.container(image, ["-c", "pass"], entrypoint=["python3"]) as box:
            containers.run_to_end(box)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def stages(manifest: Path) -> str:
    """Seconds per stage of the last run, from its summary's timeline (build/summary.md)."""
    path = manifest.parent / "build" / "summary.md"
    per: dict[str, float] = {}
    for found in re.finditer(r"^ {4}([a-z]+) ([0-9.]+)s :", path.read_text(), re.MULTILINE):
        per[found[1]] = per.get(found[1], 0.0) + float(found[2])
    return ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in per.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--registry", default="127.0.0.1:5000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--folder", type=Path, help="keep the workspace here (default: a scratch one)"
    )
    args = parser.parse_args()
    command = buildkit.cli()
    if command is None:
        raise SystemExit("no docker buildx here: bake cannot run")
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.folder or Path(scratch)
        manifest = workspace(tmp, args.registry)
        started = time.perf_counter()
        timed(doit_command(manifest), 1)
        print(f"set-up: the quickstart's whole run {time.perf_counter() - started:.0f} s")
        bake = bake_file(manifest, tmp / "bake", args.registry)
        baked = [command[0], "buildx", "bake", "--file", str(bake)]
        baked += ["--allow=network.host", f"--allow=fs.read={bake.parent}"]
        timed(baked, 1)
        ours, theirs, moved, our_work, their_work = [], [], [], [], []
        for round_ in range(args.runs):
            stamp = f"{round_} {time.time_ns()}"
            edit(manifest.parent / EDITED, stamp)
            edit(bake.parent / "training" / EDITED, stamp)
            seconds, work, output = measured(doit_command(manifest))
            ours.append(seconds)
            our_work.append(work)
            moved.append(count(output, "ok    build:"))
            seconds, work, _ = measured(baked)
            theirs.append(seconds)
            their_work.append(work)
        spent = stages(manifest)
        training = next(t for t in plan(load(manifest)) if t.spec.name == MOVED[0])
        bare = bare_container(training.image, args.runs)
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"one-line edit of {EDITED} (median of {args.runs}, in turn):")
    print(f"  doit (build, push, verify, promote): {a:.2f} s; tiers built: {sorted(set(moved))}")
    print(f"    its last run's stages (the summary's timeline): {spent}")
    print(f"  docker buildx bake (build and push of {' and '.join(MOVED)}): {b:.2f} s")
    print(f"  ratio doit/bake: {a / b:.2f} (issue 41's target: 3)")
    print(
        f"  a bare container of the training image (python3 -c pass; verify runs one per "
        f"tier): {bare:.2f} s; bake plus one per tier: {b + len(MOVED) * bare:.2f} s "
        f"({(b + len(MOVED) * bare) / b:.2f}x bake)"
    )
    work, theirs_work, cores = (
        statistics.median(our_work),
        statistics.median(their_work),
        os.cpu_count() or 1,
    )
    ratio = work / max(theirs_work, 0.01)
    print(
        f"  the machine busy (core-seconds, median): doit {work:.2f}, bake {theirs_work:.2f} "
        f"({ratio:.1f}x the work); on {cores} cores doit's work alone takes at "
        f"least {work / cores:.2f} s, {work / cores / b:.2f}x bake's time"
    )


if __name__ == "__main__":
    main()
