"""The quickstart built for the build host alone and for linux/amd64 + linux/arm64 (arm64
under QEMU user emulation), side by side in one run, each cold (an empty registry
namespace, no local build folder, no compiler cache), then the two-platform no-op.

Needs scripts/services.sh up and `scripts/services.sh arm64` (the two-platform seed
127.0.0.1:5000/seed/debian:bookworm-slim). Prints wall times, each platform's compile
time, and the emulation factor (arm64 compile / amd64 compile, the same sources).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import uuid
from pathlib import Path

from _common import REPO, doit_command, timed

SEED = "127.0.0.1:5000/seed/debian:{debian}-slim"


def workspace(
    root: Path, name: str, namespace: str, platforms: list[str] | None, kernels: str
) -> Path:
    folder = root / name
    shutil.copytree(
        REPO / "examples" / "quickstart", folder, ignore=shutil.ignore_patterns("build", "gen")
    )
    manifest = folder / "images.toml"
    text = manifest.read_text().replace(
        'registry = "127.0.0.1:5000/quickstart"', f'registry = "127.0.0.1:5000/{namespace}"'
    )
    text = text.replace(
        'sources = { fastext = "src/fastext" } }',
        f'sources = {{ fastext = "src/fastext" }}, env = {{ FASTEXT_KERNELS = "{kernels}" }} }}',
    )
    # Both from the same seed index, so the two runs differ only in their platforms.
    text = text.replace('from = "debian:{debian}-slim"', f'from = "{SEED}"')
    if platforms:
        text = text.replace("[stack]\n", f"[stack]\nplatforms = {json.dumps(platforms)}\n", 1)
    manifest.write_text(text)
    return manifest


def compile_s(manifest: Path, key: str) -> float:
    folder = manifest.parent / "build" / "default" / key
    return float(json.loads((folder / "ccache-stats.json").read_text())["compile_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kernels", default="2", help="FASTEXT_KERNELS (the tests' 2)")
    args = parser.parse_args()
    run = uuid.uuid4().hex[:8]  # a fresh registry namespace: nothing is there yet
    with tempfile.TemporaryDirectory() as tmp:
        host = workspace(Path(tmp), "host", f"bench-host-{run}", None, args.kernels)
        two = workspace(
            Path(tmp), "two", f"bench-two-{run}", ["linux/amd64", "linux/arm64"], args.kernels
        )
        host_s, _ = timed(doit_command(host), 1)
        two_s, _ = timed(doit_command(two), 1)
        noop_s, _ = timed(doit_command(two), 3)
        amd64 = compile_s(two, "fastext/linux-amd64")
        arm64 = compile_s(two, "fastext/linux-arm64")
    print(
        f"quickstart, FASTEXT_KERNELS={args.kernels}, cold (empty registry namespace, "
        "no build folder, no compiler cache):"
    )
    print(f"  build host only (linux/amd64): {host_s:7.1f} s")
    print(f"  linux/amd64 + linux/arm64:     {two_s:7.1f} s  ({two_s / host_s:.1f}x)")
    print(
        f"  fastext compile: amd64 {amd64:.1f} s, arm64 {arm64:.1f} s under QEMU: "
        f"emulation factor {arm64 / amd64:.1f}x"
    )
    print(f"  two-platform no-op (median of 3): {noop_s:.2f} s")


if __name__ == "__main__":
    main()
