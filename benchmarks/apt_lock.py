"""apt locks: how long `lock` takes, and a locked (no network) install against a networked one.

One tier from debian:bookworm-slim installs gcc, g++, git, libc6-dev and python3-dev (about
90 packages) through the shipped `apt_install` macro. Networked: the stack does not lock
apt, the step runs `apt-get update` and installs what the archive serves (BuildKit's apt
cache mounts keep the downloads). Locked: `[apt] lock = true`; `lock` resolves it (timed),
the run gathers the .debs on the host (this machine's cache keeps them) and the step
installs those files with --network=none. Each mode builds once to warm its caches, then
again with a new NONCE build arg, which invalidates the install step as a changed package
list would: that rebuild is timed. One sitting, side by side. Run after scripts/services.sh up.
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
ENV DEBIAN_FRONTEND=noninteractive
{{ m.build_args(tier.build_args) }}
{{ m.apt_install(tier.system_packages) }}
"""
PACKAGES = '["g++", "gcc", "git", "libc6-dev", "python3-dev"]'


def manifest(folder: Path, name: str, registry: str, locked: bool, nonce: str) -> Path:
    return nonce_stack(
        folder,
        name,
        registry,
        TEMPLATE,
        ("[apt]\nlock = true\n" if locked else "")
        + '[tiers.tools]\nfrom = "debian:bookworm-slim"\ntemplate = "bench.Dockerfile.j2"\n'
        + f"system_packages = {PACKAGES}\n"
        + f'build_args = {{ NONCE = "{nonce}" }}\n',
    )


def main() -> None:
    args = stack_args(__doc__)
    stamp = time.strftime("%H%M%S")
    results: dict[str, float] = {}
    resolved = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("networked", "locked"):
            folder, locked = Path(tmp) / mode, mode == "locked"
            name = f"benchapt-{mode}-{stamp}"
            if locked:
                resolved = lock_seconds(manifest(folder, name, args.registry, True, "lock"))
            results[mode] = nonce_rebuild(
                partial(manifest, folder, name, args.registry, locked), "build:tools"
            )
    print("gcc, g++, git, libc6-dev, python3-dev on debian:bookworm-slim (about 90 packages):")
    print(f"  `lock` (apt resolves in the image, one install):     {resolved:6.1f} s")
    print(f"  rebuild, networked (apt-get update, archive's bytes): {results['networked']:6.1f} s")
    print(f"  rebuild, locked (gathered files, --network=none):    {results['locked']:6.1f} s")
    print(f"  ratio locked / networked: {results['locked'] / results['networked']:.2f}")


if __name__ == "__main__":
    main()
