"""No-op `doit` on generated stacks of 5, 50 and 200 tiers: how the cost grows.

Each generated tier is a small image on top of its parent (a tree with fan-out 3, rooted
at the quickstart's fastext image, which has Python for the verify probe). The first run of
each size builds, pushes, verifies and promotes everything (minutes, not measured); then the
no-op is timed. Run after scripts/quickstart.sh.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import count, doit_command, stack_folder, timed

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
        parts.append(f'[tiers.t{i:03d}]\n{base}\ntemplate = "bench.Dockerfile.j2"\n'
                     f'verify = {{ pip_check = false }}\n')
    manifest = folder / "images.toml"
    manifest.write_text("\n".join(parts))
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[5, 50, 200])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--registry", default="127.0.0.1:5000")
    parser.add_argument("--root-image", default="127.0.0.1:5000/quickstart/fastext:latest")
    args = parser.parse_args()
    print(f"no-op doit on generated stacks (median of {args.runs}):")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            manifest = generate(Path(tmp) / str(size), size, args.registry, args.root_image)
            first, _ = timed(doit_command(manifest), 1)
            noop, output = timed(doit_command(manifest), args.runs)
            print(f"  {size:4d} tiers: {noop:.3f} s  ({noop / size * 1000:.1f} ms/tier; "
                  f"{count(output, '+ docker build')} builds; first full run {first:.0f} s)")


if __name__ == "__main__":
    main()
