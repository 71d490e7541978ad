"""A CNCF distribution registry (Debian's docker-registry) on loopback, and what the tests
ask it directly. Its readers raise on anything but the registry's own "not here" (404):
"latest did not move" must not pass because the registry was down."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request

from tests.support.servers import LoopbackServer


class Registry(LoopbackServer):
    """A CNCF distribution registry (Debian's docker-registry)."""

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        config = self.folder / "config.yml"
        config.write_text(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n"
            f"    rootdirectory: {self.folder / 'data'}\n  delete:\n    enabled: true\n"
            f"http:\n  addr: {self.address}\n"
        )
        return ["docker-registry", "serve", str(config)]

    def health_url(self) -> str:
        return f"http://{self.address}/v2/"

    def discard(self) -> None:
        """Stopped for good: its storage removed and its images forgotten by the main engine
        (a module's registry, at the module's end: CI's disk holds what is running, not
        everything every test pushed)."""
        from tests.support.engines import forget_images

        try:  # forgotten while its port is still ours: no other worker's registry has it
            forget_images(self.address)
        finally:
            self.stop()
            shutil.rmtree(self.folder / "data", ignore_errors=True)

    def tags(self, repo: str) -> list[str]:
        """The tags of `repo`; [] only when the registry says the repository is unknown."""
        try:
            with urllib.request.urlopen(
                f"http://{self.address}/v2/{repo}/tags/list", timeout=30
            ) as resp:
                return sorted(json.load(resp).get("tags") or [])
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return []
            raise

    def digest(self, repo: str, tag: str) -> str | None:
        """The digest repo:tag names (whatever kind of manifest); None only on a 404."""
        from build_graph.oci.refs import MANIFEST_TYPES

        request = urllib.request.Request(
            f"http://{self.address}/v2/{repo}/manifests/{tag}",
            method="HEAD",
            headers={"Accept": ", ".join(MANIFEST_TYPES)},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                return str(resp.headers["Docker-Content-Digest"])
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def manifest_and_config(self, repo: str, tag: str) -> list[bytes]:
        """What repo:tag travels as: its manifest (an index too, where the engine pushed one:
        the containerd image store does), the platform image's manifest and its config blob,
        read through the one reader of what a tag names (oci/contents.py)."""
        from build_graph.oci.refs import parse_ref
        from build_graph.registry import api

        ref = parse_ref(f"{self.address}/{repo}:{tag}")
        found = api.read_image(ref)
        texts = [api.get_manifest(ref).body]
        if found.named.is_index:
            texts.append(api.get_manifest(found.ref).body)
        assert found.image.config is not None
        return [*texts, api.get_blob(ref, found.image.config)]
