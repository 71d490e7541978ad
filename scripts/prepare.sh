# Sourced by quickstart.sh and test.sh: everything a fresh machine needs before a run.
# The Python side (.venv), the real services (Docker, registry, GCS emulator, base image)
# and this host's site settings for builds.
scripts/bootstrap.sh
PYTHON=.venv/bin/python scripts/services.sh up
source scripts/site-env.sh
