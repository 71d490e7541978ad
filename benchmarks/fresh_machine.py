"""A fresh CI machine: empty doit database, no local images, registry complete.

Deletes the quickstart's build/ folder (doit database, records, plan cache, wheels) and
removes every local image of the stack, then times one `doit`. Counts builds and pushes
(the promise: zero) and reports how the time splits. Run after scripts/quickstart.sh.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from _common import REPO, count, doit_command, timed


def forget_everything(manifest: Path) -> int:
    rows = json.loads(subprocess.run(
        [sys.executable, "-m", "build_graph", "plan", "--json", "--manifest", str(manifest)],
        capture_output=True, text=True, check=True).stdout)
    assert all(row["registry"] == "present" for row in rows), "run the quickstart first"
    shutil.rmtree(manifest.parent / "build", ignore_errors=True)
    refs = [row["image"] for row in rows]
    refs += [f"{row['image'].rsplit(':', 1)[0]}:{tag}" for row in rows
             for tag in row["human_tags"]]
    subprocess.run(["docker", "rmi", "-f", *refs], capture_output=True, check=False)
    subprocess.run(["docker", "image", "prune", "-f"], capture_output=True, check=False)
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--manifest", type=Path,
                        default=REPO / "examples" / "quickstart" / "images.toml")
    manifest = parser.parse_args().manifest.resolve()
    tiers = forget_everything(manifest)
    elapsed, output = timed(doit_command(manifest), 1)
    print(f"fresh-machine run of the quickstart ({tiers} tiers, registry complete):")
    print(f"  wall time {elapsed:.1f} s; builds {count(output, '+ docker build')}, "
          f"pushes {count(output, '+ docker push')}, compiles "
          f"{output.count('compiling in ')}, pulls {count(output, '+ docker pull')} "
          f"(verify re-probes each pulled digest: its reports lived in the deleted build/)")
    again, output = timed(doit_command(manifest), 3)
    print(f"  the run after it: {again:.3f} s, builds {count(output, '+ docker build')}")


if __name__ == "__main__":
    main()
