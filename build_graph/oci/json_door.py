"""JSON from outside (a registry's manifests and blobs, a stored report), parsed at the door.

`json.loads` raises RecursionError, not ValueError, for deeply nested input (`[[[[...`,
a few hundred kilobytes does it): every reader of outside JSON handles ValueError as "not
what it claims to be", so here it becomes one.
"""

from __future__ import annotations

import json
from typing import Any


def loads(data: str | bytes) -> Any:
    """json.loads; ValueError for anything that is not JSON, too deep included."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None
