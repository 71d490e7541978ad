"""Record what the index said for each row of torch_releases.json, for the tests' loopback index.

Reads the METADATA of every wheel a shipped row names (by range requests, as the refresh
did) and writes tests/recorded/pypi-torch.json: per project, per release, the wheel's file
name and URL path and its METADATA headers (Name, Version, Requires-Dist; the long
description is left out). tests/pypi_index.py serves these back on 127.0.0.1 as a simple
index with real zip wheels, so the tests rerun the refresh and `check` without a network.
Run after `python -m build_graph.pypi.refresh` (it needs pypi.org).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import urlsplit

from build_graph.gpu import releases
from build_graph.pypi.wheel_metadata import read_metadata

OUT = Path(__file__).resolve().parent.parent / "tests" / "recorded" / "pypi-torch.json"
KEPT = ("Metadata-Version", "Name", "Version", "Requires-Python", "Requires-Dist")


def headers(url: str) -> str:
    message = read_metadata(url)
    return "".join(f"{key}: {value}\n" for key, value in message.items() if key in KEPT)


def main() -> int:
    facts = releases.shipped()
    answers: dict[str, dict[str, dict[str, str]]] = {"torch": {}, "torchvision": {},
                                                     "torchaudio": {}}
    rows = [("torch", r.version, r.source) for r in facts.torch]
    rows += [(r.name, r.version, r.source) for r in facts.partners]
    for name, version, url in rows:
        print(f"{name} {version}", file=sys.stderr)
        answers[name][version] = {"path": urlsplit(url).path, "metadata": headers(url)}
    OUT.write_text(json.dumps({"index": facts.index, "projects": answers}, indent=1) + "\n")
    print(f"wrote {OUT}: {len(rows)} releases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
