"""`python -m build_graph keygen FOLDER`: a key pair for signed verify reports (ECDSA P-256,
as cosign's), FOLDER/NAME.key and FOLDER/NAME.pub (signing/keys.py makes them)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("folder", type=Path, help="where to write them")
    command.add_argument("--name", default="verify", help="file name stem (default: verify)")


def run(args: argparse.Namespace) -> int:
    from build_graph.signing.keys import generate  # cryptography: only for this command

    key, pub = generate(args.folder, args.name)
    print(f"wrote {key} (the private key: keep it out of the repository; a CI secret)")
    print(f"wrote {pub} (name it in images.toml's signing.public_keys)")
    return 0
