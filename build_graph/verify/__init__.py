"""Verification: the in-image probe, the checks against images.toml, the verify stage."""
