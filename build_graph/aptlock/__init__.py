"""The apt locks: each tier's Debian/Ubuntu packages at one version and one `.deb` (sha256),
per platform; what a template asks for, read while it renders. Imports the ground and
`manifest/` only; resolving runs apt in a container (`docker/apt.py`, `stages/apt_pin.py`)."""
