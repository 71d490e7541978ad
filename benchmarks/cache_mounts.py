"""A base-tier rebuild (its pip layer invalidated) with and without BuildKit's cache mounts.

The tier installs numpy and requests on top of the quickstart's fastext image. Each mode
runs twice: a warm-up (fills Docker's layer cache and, with BuildKit, the pip cache mount),
then a timed rebuild with a new NONCE build arg, which invalidates the pip layer as a
changed package list would. Before: the classic builder (no cache mounts: pip downloads
everything again). After: BuildKit, whose pip cache mount keeps the downloads. Run after
scripts/quickstart.sh.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from _common import doit_command, nonce_stack, stack_args, timed

TEMPLATE = """\
{% import "_macros.j2" as m %}
FROM {{ base_image }}
{{ m.site_args() }}
{{ m.build_args(tier.build_args) }}
{{ m.pip_install(tier.packages) }}
"""


def manifest(folder: Path, name: str, registry: str, root_image: str, nonce: str) -> Path:
    return nonce_stack(
        folder,
        name,
        registry,
        TEMPLATE,
        f'[tiers.pkgs]\nfrom = "{root_image}"\n'
        'template = "bench.Dockerfile.j2"\n'
        'packages = ["numpy==2.1.3", "requests==2.32.3"]\n'
        f'build_args = {{ NONCE = "{nonce}" }}\n'
        "verify = { pip_check = false }\n",
    )


def main() -> None:
    args = stack_args(__doc__)
    stamp = time.strftime("%H%M%S")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("classic", "buildkit"):
            os.environ["BUILD_GRAPH_BUILDER"] = mode
            folder = Path(tmp) / mode
            name = f"benchmounts-{mode}-{stamp}"
            path = manifest(folder, name, args.registry, args.root_image, f"warm-{stamp}")
            timed(doit_command(path, "build:pkgs"), 1)
            manifest(folder, name, args.registry, args.root_image, f"timed-{stamp}")
            results[mode], _ = timed(doit_command(path, "build:pkgs"), 1)
    print("base-tier rebuild with its pip layer invalidated (numpy + requests):")
    print(f"  classic builder, no cache mounts:  {results['classic']:6.1f} s")
    print(f"  BuildKit with the pip cache mount: {results['buildkit']:6.1f} s")
    print(f"  ratio: {results['buildkit'] / results['classic']:.2f}")


if __name__ == "__main__":
    main()
