#!/usr/bin/env bash
# Idempotent set-up of the Python side: a virtualenv in .venv with the project and its
# test tools. Re-running it only installs what changed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
if [ ! -x .venv/bin/python ]; then
  # Debian ships venv's pip bootstrap separately.
  if ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
    apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv >/dev/null
  fi
  python3 -m venv .venv
fi
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  # setuptools' notice for every editable install that is not a plain src layout (ours maps
  # the examples in as package data): informational, and a newcomer's first screen
  PYTHONWARNINGS=ignore::Warning:setuptools.command.editable_wheel \
    .venv/bin/python -m pip install -q -e '.[test]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi
