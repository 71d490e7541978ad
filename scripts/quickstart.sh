#!/usr/bin/env bash
# The main job on a fresh machine: set up, start the local registry (and Docker if needed),
# then build -> push -> verify -> promote the quickstart stack. Extra arguments go to doit.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
source scripts/prepare.sh
exec .venv/bin/doit manifest=examples/quickstart/images.toml "$@"
