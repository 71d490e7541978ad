"""Cold vs warm compile through a full GCS round trip: the quickstart's C++ extension
(--stack quickstart) or the CUDA example's extensions, nvcc under ccache for seven GPU
archs (--stack cuda).

Uses the GCS emulator of scripts/services.sh (127.0.0.1:4443). Each run starts from a wiped
workspace (no local cache, no wheels, no compile stamp), as on a fresh CI runner: the cold
run finds an empty bucket and saves its cache; the warm run restores it first.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

from _common import REPO, doit_command, timed

EMULATOR = "http://127.0.0.1:4443"
# stack -> (compiled tier, the [cache] line the bucket URL goes before)
STACKS = {"quickstart": ("fastext", 'max_size = "2G"'), "cuda": ("kernels", 'max_size = "4G"')}


def empty_bucket(name: str) -> None:
    import google.cloud.storage as storage
    from google.api_core import exceptions

    client = storage.Client()
    try:
        bucket = client.create_bucket(name)
    except exceptions.Conflict:
        bucket = client.bucket(name)
    for blob in client.list_blobs(bucket):
        blob.delete()


def wipe(root: Path, tier: str) -> None:
    for folder in ("ccache", "sources", f"default/{tier}"):
        shutil.rmtree(root / "build" / folder, ignore_errors=True)


def run(manifest: Path, tier: str) -> tuple[float, dict[str, object]]:
    wipe(manifest.parent, tier)
    # -a: the same stack may already be in the registry, which would make compiling moot.
    elapsed, _ = timed(doit_command(manifest, "-a", f"compile:{tier}"), 1)
    stats = json.loads(
        (manifest.parent / "build" / "default" / tier / "ccache-stats.json").read_text()
    )
    return elapsed, stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bucket", default="bench-ccache")
    parser.add_argument("--stack", choices=sorted(STACKS), default="quickstart")
    args = parser.parse_args()
    tier, cache_line = STACKS[args.stack]
    os.environ.setdefault("STORAGE_EMULATOR_HOST", EMULATOR)
    empty_bucket(args.bucket)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / args.stack
        shutil.copytree(
            REPO / "examples" / args.stack, root, ignore=shutil.ignore_patterns("build", "gen")
        )
        manifest = root / "images.toml"
        manifest.write_text(
            manifest.read_text().replace(
                cache_line, f'url = "gs://{args.bucket}/ccache"\n{cache_line}'
            )
        )
        timed(doit_command(manifest, "build:builder"), 1)  # the builder image, not timed
        cold, cold_stats = run(manifest, tier)
        warm, warm_stats = run(manifest, tier)
    print(f"{args.stack} compile:{tier} on a wiped workspace, cache in GCS (emulator):")
    for name, elapsed, stats in (("cold", cold, cold_stats), ("warm", warm, warm_stats)):
        numbers = stats["stats"]
        moved = stats["transfer"]
        assert isinstance(numbers, dict) and isinstance(moved, dict)
        print(
            f"  {name}: {elapsed:6.1f} s wall (compiler {stats['compile_s']} s), "
            f"hit rate {numbers['hit_rate']:.0%}, restore {moved['bytes_down']} B in "
            f"{moved['restore_s']:.2f} s, save {moved['bytes_up']} B in {moved['save_s']:.2f} s"
        )
    print(f"  warm/cold wall-time ratio: {warm / cold:.3f}")


if __name__ == "__main__":
    main()
