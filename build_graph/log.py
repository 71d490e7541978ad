"""The one progress channel: a line on stderr, flushed, so it interleaves in order."""

from __future__ import annotations

import sys


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
