"""`doit -n 2` against `doit -n 1`: a full run of a two-variant stack, side by side.

A generated stack of three tiers per variant (variants a and b), rooted at the quickstart's
fastext image. Each tier pip-installs one small package at a version its variant picks (a
network-bound step, as real builds are) and is pushed, verified and promoted. Every run
uses a fresh stack name and NONCE build arg, so neither the registry nor Docker's layer
cache serves it. Run after scripts/quickstart.sh.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from _common import count, doit_command, stack_args, stack_folder, timed

TEMPLATE = """\
{% import "_macros.j2" as m %}
FROM {{ base_image }}
{{ m.site_args() }}
{{ m.build_args(tier.build_args) }}
RUN echo "$NONCE" > /nonce && python3 -m pip install --no-cache-dir "$PKG"
"""
PACKAGES = {"t0": "six", "t1": "idna", "t2": "packaging"}
VERSIONS = {
    "a": {"six": "1.16.0", "idna": "3.6", "packaging": "23.2"},
    "b": {"six": "1.17.0", "idna": "3.7", "packaging": "24.0"},
}


def generate(folder: Path, name: str, registry: str, root_image: str) -> Path:
    parts = [stack_folder(folder, name, registry, TEMPLATE)]
    for index, (tier, package) in enumerate(PACKAGES.items()):
        base = f'from = "{root_image}"' if index == 0 else f'parent = "t{index - 1}"'
        parts.append(
            f'[tiers.{tier}]\n{base}\ntemplate = "bench.Dockerfile.j2"\n'
            f'build_args = {{ PKG = "{package}=={{{package}}}", NONCE = "{name}" }}\n'
            "verify = { pip_check = false }\n"
        )
    for variant, versions in VERSIONS.items():
        pins = ", ".join(f'{k} = "{v}"' for k, v in versions.items())
        parts.append(f"[variants.{variant}]\nversions = {{ {pins} }}\n")
    manifest = folder / "images.toml"
    manifest.write_text("\n".join(parts))
    return manifest


def main() -> None:
    args = stack_args(__doc__)
    stamp = time.strftime("%H%M%S")
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for jobs in (1, 2):
            name = f"benchpar{jobs}-{stamp}"
            manifest = generate(Path(tmp) / name, name, args.registry, args.root_image)
            seconds, output = timed(doit_command(manifest, "-n", str(jobs)), 1)
            figures[jobs] = seconds
            print(
                f"  doit -n {jobs}: {seconds:6.1f} s  ({count(output, 'ok    build:')} builds, "
                f"{count(output, 'ok    verify:')} verifies, "
                f"{count(output, 'ok    promote:')} promotes)"
            )
    print(f"  ratio -n 2 / -n 1: {figures[2] / figures[1]:.2f}")


if __name__ == "__main__":
    main()
