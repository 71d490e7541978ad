"""A signed apt repository on 127.0.0.1, as a third party publishes one (NVIDIA's CUDA
repository is this shape: a flat repository, `deb [signed-by=KEY] URL/ ./`).

Real parts: `.deb`s built by dpkg-deb, a Packages index with each file's size and sha256,
a Release listing the index's sha256, signed inline (InRelease) by a key made for the test
with gpg; the real apt in a container reads it. Archives are folders under `root`
(`debian/`, `debian-security/`), each published whole with the packages it serves now: a
version left out is gone from it, as Debian drops a superseded version. `/snapshot/<time>/`
serves what `freeze` kept, as snapshot.debian.org serves the archive as it was; each
request's path is recorded.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.loopback_http import serving

_GPG = ("gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", "")
KEYRING = "/usr/share/keyrings/build-graph-test.gpg"  # where the base image keeps the key


@dataclass
class AptRepo:
    root: Path
    address: str = ""  # 127.0.0.1:PORT once serving
    requests: list[str] = field(default_factory=list)

    # gpg's homes, short: gpg-agent's socket lives in each, and a Unix socket's path may
    # not pass 107 bytes (a home below pytest's folders does; gpg then cannot sign)
    gnupg: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="gpg-")))

    def url(self, archive: str) -> str:
        return f"http://{self.address}/{archive}"

    def make_key(self, name: str = "signer") -> Path:
        """A signing key of its own (`name`) and its public keyring, apt's `signed-by`."""
        home = self.gnupg / name
        home.mkdir(parents=True, mode=0o700)
        self._gpg(home, "--quick-generate-key", f"{name} <{name}@example.invalid>", "ed25519")
        keyring = home / "public.gpg"
        keyring.write_bytes(self._gpg(home, "--export"))
        return keyring

    def deb(self, name: str, version: str) -> Path:
        """A package installing /usr/share/build-graph-test/<name> that says its version."""
        built = self.root.parent / f"{self.root.name}-debs" / f"{name}_{version}_all.deb"
        if built.exists():
            return built
        tree = built.with_suffix(".tree")
        (tree / "DEBIAN").mkdir(parents=True)
        (tree / "DEBIAN" / "control").write_text(
            f"Package: {name}\nVersion: {version}\nArchitecture: all\n"
            "Maintainer: build-graph tests <tests@example.invalid>\n"
            f"Description: {name} {version} for the apt lock tests\n"
        )
        share = tree / "usr" / "share" / "build-graph-test"
        share.mkdir(parents=True)
        (share / name).write_text(f"{version}\n")
        subprocess.run(
            ["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(tree), str(built)],
            check=True,
            capture_output=True,
        )
        return built

    def publish(
        self,
        archive: str,
        packages: list[tuple[str, str]],
        signer: str = "signer",
        valid_for: timedelta = timedelta(days=7),
    ) -> None:
        """`archive` serving exactly `packages` (name, version), signed by `signer`; its
        Valid-Until `valid_for` from now (negative: an index gone stale)."""
        folder = self.root / archive
        shutil.rmtree(folder, ignore_errors=True)
        (folder / "pool").mkdir(parents=True)
        records = []
        for name, version in packages:
            deb = self.deb(name, version)
            shutil.copyfile(deb, folder / "pool" / deb.name)
            data = deb.read_bytes()
            control = (deb.with_suffix(".tree") / "DEBIAN" / "control").read_text()
            records.append(
                control
                + f"Filename: pool/{deb.name}\nSize: {len(data)}\n"
                + f"MD5sum: {hashlib.md5(data).hexdigest()}\n"
                + f"SHA256: {hashlib.sha256(data).hexdigest()}\n"
            )
        index = "\n".join(records).encode()
        (folder / "Packages").write_bytes(index)
        now = datetime.now(UTC)
        release = (
            f"Origin: build-graph tests\nLabel: {archive}\n"
            f"Date: {format_datetime(now - timedelta(hours=1), usegmt=True)}\n"
            f"Valid-Until: {format_datetime(now + valid_for, usegmt=True)}\n"
            f"SHA256:\n {hashlib.sha256(index).hexdigest()} {len(index)} Packages\n"
        )
        (folder / "Release").write_text(release)
        signed = self._gpg(self.gnupg / signer, "--clearsign", stdin=release.encode())
        (folder / "InRelease").write_bytes(signed)

    def freeze(self, archive: str) -> None:
        """Keep `archive` as it is now, served at /snapshot/<any time>/<archive>/."""
        kept = self.root / ".snapshot" / archive
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(self.root / archive, kept)

    def _gpg(self, home: Path, *args: str, stdin: bytes = b"") -> bytes:
        done = subprocess.run(
            [*_GPG, "--homedir", str(home), *args],
            input=stdin,
            capture_output=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout


def sources(repo: AptRepo, archives: list[str]) -> str:
    """apt's sources for the archives: each a flat repository signed by the test's key."""
    return "".join(f"deb [signed-by={KEYRING}] {repo.url(a)}/ ./\n" for a in archives)


def _handler(repo: AptRepo) -> type[SimpleHTTPRequestHandler]:
    class Archive(SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(repo.root), **kwargs)

        def translate_path(self, path: str) -> str:
            repo.requests.append(path)
            parts = path.split("/")  # '', 'snapshot', '<time>', 'debian', ...
            if len(parts) > 3 and parts[1] == "snapshot":
                path = "/".join(["", ".snapshot", *parts[3:]])
            return super().translate_path(path)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Archive


@contextmanager
def served(repo: AptRepo) -> Iterator[AptRepo]:
    repo.root.mkdir(parents=True, exist_ok=True)
    try:
        with serving(_handler(repo)) as address:
            repo.address = address
            yield repo
    finally:
        for home in repo.gnupg.iterdir():  # its agents stop with their homes' sockets
            subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"], check=False)
        shutil.rmtree(repo.gnupg, ignore_errors=True)
