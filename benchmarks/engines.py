"""The quickstart on the engines users run, side by side in one run: the engine the services
use (scripts/services.sh: the containerd image store) and a second engine of the same
release in the classic image store (scripts/engine.sh, instance `bench-classic`: its own
data root, nothing cached). For each: cold (an empty registry namespace, no build folder, no
compiler cache), the no-op after it (median of 3), and a fresh runner (the build folder
wiped, the registry full: nothing is built again).

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

from _common import REPO, count, doit_command, timed

ENGINE = REPO / "scripts" / "engine.sh"


def classic_engine(seed_from: dict[str, str]) -> str:
    """DOCKER_HOST of the classic-store engine, seeded with debian:bookworm-slim."""
    env = {**os.environ, "ENGINE_INSTANCE": "bench-classic"}
    subprocess.run([str(ENGINE), "up", "classic"], env=env, check=True)
    exports = subprocess.run([str(ENGINE), "env"], env=env, check=True, text=True,
                             capture_output=True).stdout
    host = next(line.split("=", 1)[1] for line in exports.splitlines()
                if line.startswith("export DOCKER_HOST="))
    there = {**os.environ, "DOCKER_HOST": host}
    if subprocess.run(["docker", "image", "inspect", "debian:bookworm-slim"], env=there,
                      capture_output=True, check=False).returncode != 0:
        image = subprocess.run(["docker", "save", "debian:bookworm-slim"], env=seed_from,
                               capture_output=True, check=True).stdout
        subprocess.run(["docker", "load"], input=image, env=there, check=True,
                       capture_output=True)
    return host


def workspace(root: Path, name: str, namespace: str) -> Path:
    folder = root / name
    shutil.copytree(REPO / "examples" / "quickstart", folder,
                    ignore=shutil.ignore_patterns("build", "gen"))
    manifest = folder / "images.toml"
    manifest.write_text(manifest.read_text().replace(
        'registry = "127.0.0.1:5000/quickstart"', f'registry = "127.0.0.1:5000/{namespace}"'))
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
    classic = classic_engine(main_env)
    run = uuid.uuid4().hex[:8]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, host in (("containerd store (the services' engine)", None),
                            ("classic store (engine.sh bench-classic)", classic)):
            os.environ.clear()
            os.environ.update({**main_env, **({"DOCKER_HOST": host} if host else {})})
            manifest = workspace(Path(tmp), label.split()[0], f"bench-{label.split()[0]}-{run}")
            rows.append((label, *measure(manifest)))
    os.environ.clear()
    os.environ.update(main_env)
    version = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"],
                             capture_output=True, text=True, check=False).stdout.strip()
    print(f"quickstart as shipped, Docker Engine {version}, both stores side by side:")
    for label, cold, noop, fresh, builds in rows:
        print(f"  {label}: cold {cold:6.1f} s, no-op {noop:.2f} s, fresh runner "
              f"{fresh:5.1f} s ({builds} builds)")
    (_, cold_c, noop_c, fresh_c, _), (_, cold_k, noop_k, fresh_k, _) = rows
    print(f"  containerd/classic: cold {cold_c / cold_k:.2f}, no-op {noop_c / noop_k:.2f}, "
          f"fresh runner {fresh_c / fresh_k:.2f}")


if __name__ == "__main__":
    main()
