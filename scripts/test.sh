#!/usr/bin/env bash
# The tests on a fresh machine: set up, start the real Docker daemon, registry and GCS
# emulator, then run every test (unit and integration). Extra arguments go to pytest.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
source scripts/prepare.sh
exec .venv/bin/python -m pytest "$@"
