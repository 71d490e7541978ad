"""No-op `doit` on generated stacks of 5, 50 and 200 tiers: how the cost grows.

Each generated tier is a small image on top of its parent (a tree with fan-out 3, rooted
at the quickstart's fastext image, which has Python for the verify probe). The first run of
each size builds, pushes, verifies and promotes everything (minutes, not measured); then the
no-op is timed. Run after scripts/quickstart.sh.

`--baseline DIR` times another checkout of build-graph (with its own .venv) side by side:
each code gets its own copy of the stack folder (plan caches and doit databases are not
shared) against the same registry, and their no-ops alternate, so machine noise hits both.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, count, stack_folder

TEMPLATE = """\
{% import "_macros.j2" as m %}
FROM {{ base_image }}
{{ m.site_args() }}
LABEL bench.tier={{ tier.name }}
"""


def generate(folder: Path, tiers: int, registry: str, root_image: str) -> Path:
    parts = [stack_folder(folder, f"bench{tiers}", registry, TEMPLATE)]
    for i in range(tiers):
        base = f'from = "{root_image}"' if i == 0 else f'parent = "t{(i - 1) // 3:03d}"'
        parts.append(
            f'[tiers.t{i:03d}]\n{base}\ntemplate = "bench.Dockerfile.j2"\n'
            f"verify = {{ pip_check = false }}\n"
        )
    manifest = folder / "images.toml"
    manifest.write_text("\n".join(parts))
    return manifest


def command(checkout: Path, manifest: Path) -> list[str]:
    python = checkout / ".venv" / "bin" / "python" if checkout != REPO else Path(sys.executable)
    return [str(python), "-m", "doit", "-f", str(checkout / "dodo.py"), f"manifest={manifest}"]


def run(argv: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)
    elapsed = time.perf_counter() - started
    output = result.stdout + result.stderr
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{output[-3000:]}")
    return elapsed, output


def registry_floor(registry: str, repository: str, questions: int) -> float:
    """Seconds the registry itself takes to answer `questions` manifest HEADs, one after
    another on one kept-alive socket (no client library): what a no-op cannot go below on
    one core, since every run asks the registry (hash tag, human tag, report per tier)."""
    host, _, port = registry.partition(":")
    request = (
        f"HEAD /v2/{repository}/manifests/latest HTTP/1.1\r\nHost: {registry}\r\n"
        "Accept: application/vnd.docker.distribution.manifest.v2+json\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port or 80))) as sock:
        started = time.perf_counter()
        for _ in range(questions):
            sock.sendall(request)
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += sock.recv(4096)
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[5, 50, 200])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--registry", default="127.0.0.1:5000")
    parser.add_argument("--root-image", default="127.0.0.1:5000/quickstart/fastext:latest")
    parser.add_argument("--baseline", type=Path, help="another checkout to time beside this")
    args = parser.parse_args()
    codes = {"this": REPO, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    print(f"no-op doit on generated stacks (median of {args.runs}, alternating):")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            manifests = {
                name: generate(Path(tmp) / name / str(size), size, args.registry, args.root_image)
                for name in codes
            }
            for name, checkout in codes.items():  # the full run of each code: not timed
                first, _ = run(command(checkout, manifests[name]))
                print(f"  {size:4d} tiers, {name}: first full run {first:.0f} s")
            times: dict[str, list[float]] = {name: [] for name in codes}
            outputs: dict[str, str] = {}
            for _ in range(args.runs):
                for name, checkout in codes.items():
                    elapsed, outputs[name] = run(command(checkout, manifests[name]))
                    times[name].append(elapsed)
            medians = {name: statistics.median(t) for name, t in times.items()}
            for name, median in medians.items():
                print(
                    f"  {size:4d} tiers, {name}: no-op {median:.3f} s "
                    f"({median / size * 1000:.1f} ms/tier; "
                    f"{count(outputs[name], '+ docker build')} builds)"
                )
            if "baseline" in medians:
                print(
                    f"  {size:4d} tiers: this/baseline = "
                    f"{medians['this'] / medians['baseline']:.2f}"
                )
            floor = registry_floor(args.registry, f"bench{size}/t000", 3 * size)
            print(
                f"  {size:4d} tiers: the registry alone answers {3 * size} HEADs in "
                f"{floor:.3f} s (sequential, raw socket)"
            )


if __name__ == "__main__":
    main()
