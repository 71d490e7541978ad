# Sourced by quickstart.sh and test.sh: everything a fresh machine needs before a run.
# The Python side (.venv) and the real services (Docker, registry, GCS emulator, base image).
# services.sh prints the exports for the engine it started (none when one already answered).
# Nothing about this host's CAs: builds get the host's CA bundle themselves (settings.py).
scripts/bootstrap.sh
engine_exports=$(PYTHON=.venv/bin/python scripts/services.sh up)
eval "$engine_exports"
