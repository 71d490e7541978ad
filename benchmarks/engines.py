"""The quickstart on both image stores of the current engine, side by side in one run: two
fresh engines of one release (scripts/engine.sh instances `bench-containerd` and
`bench-classic`, purged first: no BuildKit cache, no images but debian:bookworm-slim loaded
from the services' engine). For each: cold (a fresh engine, an empty registry namespace, no
build folder, no compiler cache), the no-op after it (median of 3), and a fresh runner (the
build folder wiped, the registry full: nothing is built again). Both are purged afterwards.

Needs scripts/services.sh up (the registry on 127.0.0.1:5000). Prints seconds and ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

from _common import REPO, count, doit_command, engine_up, timed

ENGINE = REPO / "scripts" / "engine.sh"


def fresh_engine(store: str, seed_from: dict[str, str]) -> str:
    """DOCKER_HOST of a fresh engine in `store`, seeded with debian:bookworm-slim."""
    env = {
        **os.environ,
        "ENGINE_INSTANCE": f"bench-{store}",
        "ENGINE_MIN_API": "",
        "ENGINE_TCP": "",
        "ENGINE_CA_DIR": "",
    }
    host = engine_up(env, store)
    image = subprocess.run(
        ["docker", "save", "debian:bookworm-slim"], env=seed_from, capture_output=True, check=True
    ).stdout
    subprocess.run(
        ["docker", "load"],
        input=image,
        env={**os.environ, "DOCKER_HOST": host},
        check=True,
        capture_output=True,
    )
    return host


def purge(store: str) -> None:
    subprocess.run(
        [str(ENGINE), "purge"], env={**os.environ, "ENGINE_INSTANCE": f"bench-{store}"}, check=False
    )


def workspace(root: Path, name: str, namespace: str) -> Path:
    folder = root / name
    shutil.copytree(
        REPO / "examples" / "quickstart", folder, ignore=shutil.ignore_patterns("build", "gen")
    )
    manifest = folder / "images.toml"
    manifest.write_text(
        manifest.read_text().replace(
            'registry = "127.0.0.1:5000/quickstart"', f'registry = "127.0.0.1:5000/{namespace}"'
        )
    )
    return manifest


def measure(manifest: Path) -> tuple[float, float, float, int]:
    """Cold, no-op (median of 3), fresh runner; and how many builds the fresh runner ran."""
    cold, _ = timed(doit_command(manifest), 1)
    noop, _ = timed(doit_command(manifest), 3)
    shutil.rmtree(manifest.parent / "build")
    fresh, output = timed(doit_command(manifest, "--verbosity", "2"), 1)
    return cold, noop, fresh, count(output, "+ docker build ")


def main() -> None:
    argparse.ArgumentParser(description=__doc__).parse_args()
    main_env = dict(os.environ)
    run = uuid.uuid4().hex[:8]
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for store in ("containerd", "classic"):
                host = fresh_engine(store, main_env)
                os.environ.clear()
                os.environ.update({**main_env, "DOCKER_HOST": host})
                manifest = workspace(Path(tmp), store, f"bench-{store}-{run}")
                rows.append((store, *measure(manifest)))
                os.environ.clear()
                os.environ.update(main_env)
    finally:
        os.environ.clear()
        os.environ.update(main_env)
        for store in ("containerd", "classic"):
            purge(store)
    version = subprocess.run(
        ["docker", "version", "--format", "{{.Server.Version}}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    print(f"quickstart as shipped, Docker Engine {version}, fresh engines side by side:")
    for store, cold, noop, fresh, builds in rows:
        print(
            f"  {store:<10} store: cold {cold:6.1f} s, no-op {noop:.2f} s, fresh runner "
            f"{fresh:5.1f} s ({builds} builds)"
        )
    (_, cold_c, noop_c, fresh_c, _), (_, cold_k, noop_k, fresh_k, _) = rows
    print(
        f"  containerd/classic: cold {cold_c / cold_k:.2f}, no-op {noop_c / noop_k:.2f}, "
        f"fresh runner {fresh_c / fresh_k:.2f}"
    )


if __name__ == "__main__":
    main()
