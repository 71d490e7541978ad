"""What an image has installed, for its SBOM: Debian packages and Python distributions.

Runs inside the image beside probe.py: standard library only. Reads dpkg's status file (the
database dpkg itself keeps; an image without dpkg has none) and the distributions the
image's Python sees (importlib.metadata: name, version, license, where installed).
"""

from __future__ import annotations

import re
from importlib import metadata

DPKG_STATUS = "/var/lib/dpkg/status"
LICENSE_CHARS = 200  # some distributions put the whole license text in 'License'


def debian_packages(status: str = DPKG_STATUS) -> list[dict[str, str]]:
    """Every package dpkg lists as installed: name, version, architecture, source (none
    where the image has no dpkg database)."""
    return dpkg_database(status) or []


def dpkg_database(status: str = DPKG_STATUS) -> list[dict[str, str]] | None:
    """debian_packages, or None where the image has no dpkg database (removed to save
    space, or never there): verify's apt lock check is then 'not checked', never a list
    of packages 'not installed'."""
    try:
        with open(status, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None
    found = []
    for paragraph in text.split("\n\n"):
        fields = _fields(paragraph)
        if fields.get("Status", "").split()[-1:] == ["installed"] and "Package" in fields:
            found.append(
                {
                    "name": fields["Package"],
                    "version": fields.get("Version", ""),
                    "architecture": fields.get("Architecture", ""),
                    "source": fields.get("Source", fields["Package"]).split()[0],
                }
            )
    return sorted(found, key=lambda p: (p["name"], p["architecture"]))


def _fields(paragraph: str) -> dict[str, str]:
    """A deb822 paragraph's fields (continuation lines, which start with a space, dropped:
    no field we read spans lines)."""
    fields = {}
    for line in paragraph.splitlines():
        if line and not line[0].isspace() and ":" in line:
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    return fields


def python_distributions() -> list[dict[str, str]]:
    """Every distribution this interpreter sees: name, version, license, location."""
    found = []
    for dist in metadata.distributions():
        meta = dist.metadata
        name = (meta.get_all("Name") or [""])[0] or ""
        if not name:
            continue
        found.append(
            {
                "name": name,
                "version": dist.version or "",
                "license": _license(meta)[:LICENSE_CHARS],
                "location": str(dist.locate_file("")),
            }
        )
    return sorted(found, key=lambda d: (d["name"].lower(), d["location"]))


def _license(meta: metadata.PackageMetadata) -> str:
    """License-Expression (PEP 639), else License, else the license classifiers."""
    for key in ("License-Expression", "License"):
        # get_all: None for a missing key on every Python (meta[key] raises on 3.14+)
        value = ((meta.get_all(key) or [""])[0] or "").strip()
        if value and value.upper() != "UNKNOWN":
            return value.splitlines()[0]
    classifiers = [
        c.split(" :: ")[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License ::")
    ]
    return " OR ".join(classifiers)


def os_release(path: str = "/etc/os-release") -> dict[str, str]:
    """ID and VERSION_ID of the image's distribution ('ubuntu', '24.04'); {} if unknown."""
    found: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.strip().partition("=")
                if key in ("ID", "VERSION_ID"):
                    found[key.lower()] = value.strip().strip('"').strip("'")[:40]
    except OSError:
        return {}
    return found


def collect() -> dict[str, object]:
    return {"debian": debian_packages(), "python": python_distributions(), "distro": os_release()}


# Where Debian and Ubuntu's apt puts Python packages (python3-yaml, ...); pip installs to
# /usr/local. apt's are listed in the SBOM, pip's are held to the lock.
APT_PYTHON = "/usr/lib/python3/dist-packages"


def pip_distributions() -> dict[str, str]:
    """Name (as its metadata writes it) -> version of every distribution not installed by
    apt. Also run alone in a tier's root `from` image: verify's baseline."""
    return {
        d.metadata["Name"] or "": d.version
        for d in metadata.distributions()
        if not str(d.locate_file("")).startswith(APT_PYTHON)
    }


def pip_requirements() -> dict[str, list[str]]:
    """Name -> the names of the distributions it requires (Requires-Dist, extras' left
    out, other markers not evaluated: a superset), for every distribution not installed by
    apt. What a package installed outside the lock (torch from PyTorch's index) pulled in."""
    found: dict[str, list[str]] = {}
    for d in metadata.distributions():
        if str(d.locate_file("")).startswith(APT_PYTHON):
            continue
        names = []
        for line in d.requires or []:
            requirement, _, marker = line.partition(";")
            if "extra" in marker:
                continue
            name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
            if name:
                names.append(name[1])
        found[d.metadata["Name"] or ""] = names
    return found
