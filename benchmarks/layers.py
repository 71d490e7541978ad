"""A multi-GB tier, end to end, per compression: what building, pushing and a GPU node's
fresh pull cost, side by side with Docker's own `docker push` / `docker pull` of the same
image (the current engine, and Debian 12's Docker 20.10, which compresses while it pushes),
each also as a ratio to this machine's disk write speed.

The tier is generated: debian:bookworm-slim plus --gb of 64 MiB files, each 8 MiB of random
bytes (compressed data) and 56 MiB of random symbols from 16 letters (4 bits a byte, which
every decompressor must decode symbol by symbol), so gzip keeps about 60% of it, as it does
of a CUDA wheel's libraries. It is built
and pushed by the tool (`doit push:big`) once with `[layers] compression = "gzip"` and once
with "zstd"; its figures come from the tier's figures.json. Fresh pulls run on a purged
engine each (scripts/engine.sh instance `bench-pull`, current Docker, containerd store);
Docker 20.10 (instance `bench-old`, ENGINE_SUITE=bookworm) loads the gzip image with
`docker load` and pushes it to a new repository, then pulls it fresh.

Needs scripts/services.sh up (registry on 127.0.0.1:5000), root (engines) and about five
times --gb of free disk while it runs (images, layouts, registry copies).

    .venv/bin/python benchmarks/layers.py [--gb 3] [--registry 127.0.0.1:5000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from _common import REPO, doit_command, engine_up
from push import disk_write_speed

ENGINE = REPO / "scripts" / "engine.sh"
MIB = 1 << 20
TEMPLATE = """\
FROM {{ base_image }}
# {run}: a cold build for each compression (no BuildKit cache shared between them)
RUN mkdir /payload && sixteen=$(for i in $(seq 16); do printf abcdefghijklmnop; done) && \\
    for i in $(seq 1 {files}); do \\
      { head -c 8M /dev/urandom; head -c 56M /dev/urandom | tr '\\000-\\377' "$sixteen"; } \\
        > /payload/part-$i; \\
    done
"""


def engine(instance: str, suite: str = "") -> dict[str, str]:
    """The environment of a fresh engine `instance` (purged first), current Docker on the
    containerd store, or with `suite` bookworm Debian 12's Docker 20.10."""
    env = {**os.environ, "ENGINE_INSTANCE": instance, "ENGINE_MIN_API": "", "ENGINE_TCP": ""}
    env |= {"ENGINE_CA_DIR": ""}
    if suite:
        env |= {"ENGINE_SUITE": suite, "ENGINE_ROOT": "/var/lib/build-graph/engine-" + suite}
    host = engine_up(env, "classic" if suite else "containerd")
    docker = "/var/lib/build-graph/engine-bookworm/usr/bin/docker" if suite else "docker"
    return {**os.environ, "DOCKER_HOST": host, "BENCH_DOCKER": docker, "ENGINE_INSTANCE": instance}


def stop(env: dict[str, str]) -> None:
    subprocess.run([str(ENGINE), "purge"], env=env, check=False, capture_output=True)


def timed_docker(env: dict[str, str], *args: str, data: bytes | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [env["BENCH_DOCKER"], *args], env=env, input=data, capture_output=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"docker {' '.join(args)} failed: {done.stderr.decode()[-2000:]}")
    return time.perf_counter() - started


def build_and_push(folder: Path, registry: str, compression: str, files: int) -> dict[str, object]:
    """`doit push:big` of the generated tier; its figures.json and its image reference."""
    run = uuid.uuid4().hex[:8]
    (folder / "templates").mkdir(parents=True)
    (folder / "templates" / "big.Dockerfile.j2").write_text(
        TEMPLATE.replace("{run}", run).replace("{files}", str(files))
    )
    (folder / "images.toml").write_text(
        f'[stack]\nname = "bench{run}"\nregistry = "{registry}/bench-{run}"\n'
        f'[versions]\npython = "3.11"\n[layers]\ncompression = "{compression}"\n'
        '[tiers.big]\nfrom = "debian:bookworm-slim"\ntemplate = "big.Dockerfile.j2"\n'
    )
    (folder / "images.lock").write_bytes((REPO / "examples/quickstart/images.lock").read_bytes())
    result = subprocess.run(
        doit_command(folder / "images.toml", "push:big"),
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    if result.returncode != 0:
        said = (result.stdout + result.stderr)[-3000:]
        raise SystemExit(f"doit push:big ({compression}) failed:\n{said}")
    figures = json.loads((folder / "build" / "default" / "big" / "figures.json").read_text())
    push = json.loads((folder / "build" / "default" / "big" / "push.json").read_text())
    repo = str(push["image"]).rsplit(":", 1)[0]
    return {**figures, "image": push["image"], "ref": f"{repo}@{push['digest']}"}


def fresh_pull(ref: str, suite: str = "") -> float:
    env = engine("bench-old" if suite else "bench-pull", suite)
    try:
        return timed_docker(env, "pull", ref)
    finally:
        stop(env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gb", type=float, default=3.0, help="payload in GB (default 3)")
    parser.add_argument("--registry", default="127.0.0.1:5000")
    args = parser.parse_args()
    files = max(1, int(args.gb * 1e9 / (64 * MIB)))
    payload = files * 64 * MIB
    took: dict[str, float] = {}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="layers-bench-", dir="/var/tmp") as tmp:
        disk = disk_write_speed(Path(tmp), 1024 * MIB)
        made = {c: build_and_push(Path(tmp) / c, args.registry, c, files) for c in ("gzip", "zstd")}
        for c, figures in made.items():
            build, push = figures["build"], figures["push"]
            assert isinstance(build, dict) and isinstance(push, dict)
            took[f"build ({c}): BuildKit, compressing once"] = float(build["seconds"])
            took[f"push ({c}): ours, from the OCI layout"] = float(push["seconds"])
            sizes[c] = int(build["image_bytes"])
        gzip_image = str(made["gzip"]["image"])
        here = {**os.environ, "BENCH_DOCKER": "docker"}
        again = f"{gzip_image.rsplit(':', 1)[0]}-docker:bench"
        timed_docker(here, "tag", gzip_image, again)
        took["push (gzip): docker push, current engine"] = timed_docker(here, "push", again)
        saved = subprocess.run(["docker", "save", gzip_image], capture_output=True, check=True)
        old = engine("bench-old", "bookworm")
        try:
            timed_docker(old, "load", data=saved.stdout)
            legacy = f"{gzip_image.rsplit(':', 1)[0]}-legacy:bench"
            timed_docker(old, "tag", gzip_image, legacy)
            took["push (gzip): docker push, Docker 20.10"] = timed_docker(old, "push", legacy)
        finally:
            stop(old)
        for c, figures in made.items():
            took[f"fresh pull ({c}): docker pull, current"] = fresh_pull(str(figures["ref"]))
        gzip_ref = str(made["gzip"]["ref"])
        took["fresh pull (gzip): docker pull, Docker 20.10"] = fresh_pull(gzip_ref, "bookworm")
        # The images are several GB each on this engine: gone again (the registry keeps its
        # copies under bench-<run>/, said below)
        images = [str(f["image"]) for f in made.values()] + [again]
        subprocess.run(["docker", "rmi", "-f", *images], capture_output=True, check=False)
    print(
        f"payload {payload / 1e9:.2f} GB on debian:bookworm-slim; compressed image: gzip "
        f"{sizes['gzip'] / 1e9:.2f} GB, zstd {sizes['zstd'] / 1e9:.2f} GB; "
        f"disk writes {disk / 1e6:.0f} MB/s"
    )
    print(f"{'':<46} {'seconds':>8} {'payload GB/s':>13} {'x disk':>7}")
    for name, seconds in took.items():
        rate = payload / seconds
        print(f"{name:<46} {seconds:>8.1f} {rate / 1e9:>13.2f} {rate / disk:>7.2f}")
    legacy_push = took["push (gzip): docker push, Docker 20.10"]
    for c in ("gzip", "zstd"):
        ours = took[f"push ({c}): ours, from the OCI layout"]
        print(f"docker push (20.10) / ours ({c}): {legacy_push / ours:.1f}x")
    pulls = [took[f"fresh pull ({c}): docker pull, current"] for c in ("gzip", "zstd")]
    print(f"fresh pull gzip / zstd: {pulls[0] / pulls[1]:.2f}x")
    repos = sorted({str(f["image"]).rsplit("/", 2)[-2] for f in made.values()})
    print(f"left in the registry (about {3 * payload / 1e9:.0f} GB): {', '.join(repos)}")


if __name__ == "__main__":
    main()
