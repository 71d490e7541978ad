"""Hermetic builds: a tier's rebuild with `[stack] hermetic = true` against a networked one.

One tier from debian:bookworm-slim: Debian's Python (its apt lock) and numpy, pandas and
requests from PyPI (its Python lock, about 60 MB of wheels). Networked: the pip step asks
the index and downloads through BuildKit's pip cache mount. Hermetic: the run gathers the
lock's wheels on the host (from the tier's folder once fetched), sends them in the build
context and the build runs with --network=none. Each mode locks, builds once to warm its
caches, then again with a new NONCE build arg, which invalidates both install steps as a
changed package list would: that rebuild is timed. One sitting, side by side. Run after
scripts/services.sh up.
"""

from __future__ import annotations

import tempfile
import time
from functools import partial
from pathlib import Path

from _common import lock_seconds, nonce_rebuild, nonce_stack, stack_args

TEMPLATE = """\
{% import "_macros.j2" as m %}
FROM {{ base_image }}
{{ m.site_args() }}
ENV DEBIAN_FRONTEND=noninteractive
{{ m.build_args(tier.build_args) }}
{{ m.system_python(versions) }}
{{ m.pip_install(python_lock) }}
"""
PACKAGES = '["numpy==2.3.5", "pandas==2.3.3", "requests==2.32.5"]'


def manifest(folder: Path, name: str, registry: str, hermetic: bool, nonce: str) -> Path:
    return nonce_stack(
        folder,
        name,
        registry,
        TEMPLATE,
        "[apt]\nlock = true\n"
        + '[tiers.py]\nfrom = "debian:bookworm-slim"\ntemplate = "bench.Dockerfile.j2"\n'
        + f"packages = {PACKAGES}\n"
        + f'build_args = {{ NONCE = "{nonce}" }}\n',
        stack_keys="hermetic = true\n" if hermetic else "",
    )


def main() -> None:
    args = stack_args(__doc__)
    stamp = time.strftime("%H%M%S")
    results: dict[str, float] = {}
    locked: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("networked", "hermetic"):
            folder, hermetic = Path(tmp) / mode, mode == "hermetic"
            write = partial(manifest, folder, f"benchpy-{mode}-{stamp}", args.registry, hermetic)
            locked[mode] = lock_seconds(write("lock"))
            results[mode] = nonce_rebuild(write, "build:py")
    print("Debian's python3 + numpy, pandas, requests (locked) on debian:bookworm-slim:")
    print(
        f"  `lock` (apt and Python), networked / hermetic stack: {locked['networked']:5.1f} s / ",
        end="",
    )
    print(f"{locked['hermetic']:.1f} s")
    print(f"  rebuild, networked (index, pip cache mount):  {results['networked']:6.1f} s")
    print(f"  rebuild, hermetic (gathered wheels, no network): {results['hermetic']:6.1f} s")
    print(f"  ratio hermetic / networked: {results['hermetic'] / results['networked']:.2f}")


if __name__ == "__main__":
    main()
