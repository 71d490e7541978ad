"""A real server process on loopback: started, waited for, stopped, started again."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar


def free_port() -> int:
    """A port nothing listens on now (the kernel's choice, 127.0.0.1 only)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LoopbackServer:
    """A real server process on 127.0.0.1 with its own storage folder; stoppable, restartable."""

    folder: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    def health_url(self) -> str:
        raise NotImplementedError

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{type(self).__name__} on port {self.port} exited at start"
                    f" (status {self.process.returncode}): is the port taken?"
                )
            try:
                urllib.request.urlopen(self.health_url(), timeout=1)
            except OSError:
                time.sleep(0.2)
                continue
            # Answered, and by ours: a process that lost the port to a server beside it
            # (another test worker's) exits, while that server answers the health check.
            time.sleep(0.2)
            if self.process.poll() is None:
                return
            raise RuntimeError(
                f"{type(self).__name__} on port {self.port} exited at start "
                f"(status {self.process.returncode}): the port is another server's"
            )
        raise RuntimeError(f"{type(self).__name__} on port {self.port} did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None


S = TypeVar("S", bound=LoopbackServer)


def started_on_a_free_port(make: Callable[[int], S], attempts: int = 3) -> S:
    """`make(port)` started on a free port; another port when a process beside this one
    (a parallel test worker) took the port between the kernel's choice and the start."""
    for attempt in range(attempts):
        server = make(free_port())
        try:
            server.start()
            return server
        except RuntimeError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")
