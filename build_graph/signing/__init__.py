"""Signed verify reports: DSSE envelopes in Sigstore bundles, keys (files, Cloud KMS) and
the rule for which signatures count."""
