#!/usr/bin/env bash
# The tests on a fresh machine: set up, start the real Docker daemon, registry and GCS
# emulator, then run every test (unit and integration). Extra arguments go to pytest.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
source scripts/prepare.sh
# Whole modules to each of BUILD_GRAPH_TEST_WORKERS workers (2: these machines' cores; 1
# runs in this process), in the order tests/conftest.py collects them: longest first.
workers=${BUILD_GRAPH_TEST_WORKERS:-2}
if [ "$workers" -gt 1 ]; then
  exec .venv/bin/python -m pytest -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
fi
exec .venv/bin/python -m pytest "$@"
