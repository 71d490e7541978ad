"""Save and restore of a 1 GiB compiler cache: our zstd archive vs `tar czf` / `tar xzf`.

The cache is made of ccache-like entries (already-compressed, so random bytes, 20-200 KiB
each). Also measures the disk's own sequential write and read of 1 GiB (dd with fsync;
the read comes from the page cache when the kernel keeps it, as for the archive reads).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from build_graph.ccache import archive as ccache_archive


def make_cache(folder: Path, total: int) -> None:
    rng = random.Random(7)
    written, n = 0, 0
    while written < total:
        size = rng.randint(20 << 10, 200 << 10)
        path = folder / f"{n % 16:x}" / f"{n % 256:02x}" / f"{n:08d}R"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))
        written, n = written + size, n + 1


def clock(fn: object, *args: object) -> tuple[float, float]:
    """(seconds until the call returned, seconds until its writes also reached the disk)."""
    subprocess.run(["sync"], check=True)
    started = time.perf_counter()
    fn(*args)  # type: ignore[operator]
    returned = time.perf_counter() - started
    subprocess.run(["sync"], check=True)
    return returned, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=1024)
    args = parser.parse_args()
    total = args.mib << 20
    with tempfile.TemporaryDirectory(dir=Path.home()) as tmp:
        base = Path(tmp)
        cache = base / "cache"
        make_cache(cache, total)
        size = ccache_archive.folder_size(cache)
        ours_save = clock(ccache_archive.pack, cache, base / "c.tar.zst")
        ours_restore = clock(ccache_archive.unpack, base / "c.tar.zst", base / "restored")
        tar_save = clock(subprocess.run, ["tar", "czf", str(base / "c.tgz"), "-C", str(cache), "."])
        (base / "untar").mkdir()
        tar_restore = clock(
            subprocess.run, ["tar", "xzf", str(base / "c.tgz"), "-C", str(base / "untar")]
        )
        shutil.rmtree(base / "restored")
        dd_write = clock(
            subprocess.run,
            [
                "dd",
                "if=/dev/zero",
                f"of={base / 'dd'}",
                "bs=4M",
                f"count={args.mib // 4}",
                "conv=fsync",
                "status=none",
            ],
        )
        dd_read = clock(
            subprocess.run, ["dd", f"if={base / 'dd'}", "of=/dev/null", "bs=4M", "status=none"]
        )
    mib = size / 2**20
    print(
        f"compiler cache of {mib:.0f} MiB ({os.cpu_count()} cores); "
        "times until the call returns / until its writes are on disk (sync):"
    )
    for name, ours, theirs, tool in (
        ("save", ours_save, tar_save, "tar czf"),
        ("restore", ours_restore, tar_restore, "tar xzf"),
    ):
        print(
            f"  {name:8s} ours {mib / ours[0]:6.1f} / {mib / ours[1]:6.1f} MiB/s   {tool} "
            f"{mib / theirs[0]:6.1f} / {mib / theirs[1]:6.1f} MiB/s   speed-up "
            f"{theirs[0] / ours[0]:.1f}x / {theirs[1] / ours[1]:.1f}x"
        )
    write = args.mib / dd_write[1]
    print(
        f"  disk     dd write {write:6.1f} MiB/s (fsync), read {args.mib / dd_read[0]:6.1f} MiB/s"
        f"; ours on disk: save {mib / ours_save[1] / write:.0%}, restore "
        f"{mib / ours_restore[1] / write:.0%} of the disk's write speed"
    )


if __name__ == "__main__":
    main()
