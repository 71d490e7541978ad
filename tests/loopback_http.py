"""A standard-library HTTP server on 127.0.0.1 in a thread, for the block: the stand-ins
the tests run (a lying proxy, a fake KMS) are all this with their own handler."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], port: int = 0) -> Iterator[str]:
    """'127.0.0.1:PORT' of a server of `handler` on `port` (a free one unless told); shut
    down after the block."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
