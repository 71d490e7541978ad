# Sourced by quickstart.sh and test.sh: everything a fresh machine needs before a run.
# The Python side (.venv) and the real services (Docker, registry, GCS emulator, base image).
# Nothing about this host's CAs: builds get the host's CA bundle themselves (settings.py).
scripts/bootstrap.sh
PYTHON=.venv/bin/python scripts/services.sh up
