"""A blob into a file, streamed: a multi-GB layer read from a registry never sits in memory.

The door is the same as registry/api.py's: the bytes are hashed as they arrive and must be
the digest asked for, and as many as the descriptor states; otherwise the file is removed
and the answer refused (UntrustedAnswer). `python -m build_graph size` reads layers so.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import BinaryIO

from build_graph.errors import UntrustedAnswer
from build_graph.oci import problems
from build_graph.oci.digest import Digest
from build_graph.oci.refs import Ref
from build_graph.registry.api import BLOB_LIMIT
from build_graph.registry.transport import client


def download_blob(ref: Ref, digest: Digest, size: int, dest: Path) -> None:
    """The blob `digest` of `ref`'s repository into the file `dest`, as it arrives (a
    multi-GB layer never sits in memory), hashed on the way: other bytes, or more or fewer
    than the `size` its descriptor states, and `dest` is removed and UntrustedAnswer
    raised. A read asked again starts the file over."""
    sink = _HashedFile(dest, size, f"blob {digest} of {ref.repository} from {ref.host}")
    try:
        response = client(ref.api_host).request(
            "GET", ref.repository, f"blobs/{digest}", limit=BLOB_LIMIT, sink=sink
        )
    except BaseException:
        sink.close()
        dest.unlink(missing_ok=True)
        raise
    sink.close()
    problem = (
        None
        if response.status != 200
        else f"other bytes (they hash to sha256:{sink.hash.hexdigest()})"
        if sink.hash.hexdigest() != digest.hex
        else f"{sink.size} bytes where its descriptor says {size}"
        if sink.size != size
        else None
    )
    if response.status != 200 or problem is not None:
        dest.unlink(missing_ok=True)
    if response.status != 200:
        raise problems.refused(
            ref.host, f"reading blob {digest} of {ref.repository}", response.status, response.body
        )
    if problem is not None:
        raise UntrustedAnswer(
            f"the registry {ref.host} served {problem} for blob {digest} of {ref.repository}; "
            "refusing them"
        )


class _HashedFile:
    """A transport sink: a file written afresh on each start, its bytes hashed as they go,
    refused the moment they pass the size the descriptor states (an endless body never
    fills the disk)."""

    def __init__(self, path: Path, most: int, what: str) -> None:
        self.path, self.most, self.what = path, most, what
        self.hash, self.size = hashlib.sha256(), 0
        self.handle: BinaryIO | None = None

    def start(self) -> None:
        self.close()
        self.handle, self.hash, self.size = self.path.open("wb"), hashlib.sha256(), 0

    def write(self, data: bytes, /) -> int:
        assert self.handle is not None, "start() first"
        self.hash.update(data)
        self.size += len(data)
        if self.size > self.most:
            raise UntrustedAnswer(
                f"the {self.what} passed the {self.most} bytes its descriptor states; refusing it"
            )
        return int(self.handle.write(data))

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None
