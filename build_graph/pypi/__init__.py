"""The Python package index, read-only: project pages (PEP 691 JSON, PEP 503 HTML), a wheel's
METADATA by HTTP range requests, and the torch compatibility facts read from them."""
