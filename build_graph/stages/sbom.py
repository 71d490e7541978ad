"""An image's SBOM: the probe's inventory (Debian packages, Python distributions) as
CycloneDX 1.6 JSON, made with cyclonedx-python-lib.

Plain values in (the probe's "inventory" section, the image's repository and digest),
text out; the verify stage publishes it beside the report (registry/reports.py). What
the probe read inside an image is from outside: a field of the wrong shape is skipped,
never trusted.

Here, not in verify/: the verifier's fingerprint covers verify/ (verify/request.py), and a
change to how the SBOM is written must not re-verify every image (a GPU run each). What the
probe lists (verify/in_image/inventory.py) is covered: a new inventory re-verifies.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from typing import Any

from build_graph.errors import BuildFailed
from build_graph.oci.digest import Digest

MEDIA_TYPE = "application/vnd.cyclonedx+json"
LOCK_PROPERTY = "build-graph:python-lock"


def cyclonedx_json(
    inventory: object, repository: str, digest: Digest, python_lock: str | None = None
) -> str:
    """The SBOM of `repository@digest`; `python_lock` ('images.pylock/base.linux-amd64.toml
    sha256:...') names the lock the tier's packages were installed from, as the metadata
    property build-graph:python-lock. Raises BuildFailed when the inventory is missing
    (the probe could not list the image). Not schema-checked here: the library's
    validator takes seconds per image; the tests run it (tests/unit/test_sbom.py)."""
    from cyclonedx.model import Property
    from cyclonedx.model.bom import Bom
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.output.json import JsonV1Dot6

    if not isinstance(inventory, dict):
        raise BuildFailed(
            f"{repository}@{digest}: the probe listed no packages, so there is "
            "no SBOM; see the report's 'errors' for why"
        )
    bom = Bom()
    bom.metadata.component = Component(
        type=ComponentType.CONTAINER, name=repository, version=str(digest), bom_ref=str(digest)
    )
    if python_lock:
        bom.metadata.properties.add(Property(name=LOCK_PROPERTY, value=python_lock))
    distro = inventory.get("distro")
    distro = distro if isinstance(distro, dict) else {}
    for component in [*_debian(inventory.get("debian"), distro), *_python(inventory.get("python"))]:
        bom.components.add(component)
    with warnings.catch_warnings():
        # The library warns that the image has no dependency graph: true, the SBOM lists
        # what is installed, not who needs what (dpkg's Depends is not read yet).
        warnings.simplefilter("ignore", UserWarning)
        return str(JsonV1Dot6(bom).output_as_string(indent=1))


def _entries(value: object) -> Iterator[dict[str, str]]:
    """The entries of a list the probe sent whose fields are all strings."""
    for entry in value if isinstance(value, list) else []:
        if isinstance(entry, dict) and all(isinstance(v, str) for v in entry.values()):
            yield entry


def _debian(packages: object, distro: dict[str, Any]) -> Iterator[Any]:
    """dpkg's packages, named as the purl spec names them: the vendor (debian, ubuntu) as
    namespace and `distro=<id>-<version>` (scanners match advisories on both)."""
    from cyclonedx.model.component import Component, ComponentType
    from packageurl import PackageURL

    vendor = str(distro.get("id") or "debian")
    vendor = vendor if re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,30}", vendor) else "debian"
    version = str(distro.get("version_id") or "")
    for p in _entries(packages):
        if not p.get("name"):
            continue
        qualifiers = {"arch": p["architecture"]} if p.get("architecture") else {}
        if re.fullmatch(r"[0-9A-Za-z.]{1,20}", version):
            qualifiers["distro"] = f"{vendor}-{version}"
        purl = PackageURL(
            "deb", vendor, p["name"], p.get("version") or None, qualifiers=qualifiers or None
        )
        yield Component(
            type=ComponentType.LIBRARY,
            name=p["name"],
            version=p.get("version"),
            purl=purl,
            bom_ref=f"{purl}",
        )


def _python(distributions: object) -> Iterator[Any]:
    from cyclonedx.contrib.license.factories import LicenseFactory
    from cyclonedx.model import Property
    from cyclonedx.model.component import Component, ComponentType
    from packageurl import PackageURL

    licenses = LicenseFactory()
    for d in _entries(distributions):
        if not d.get("name"):
            continue
        purl = PackageURL("pypi", None, d["name"].lower(), d.get("version") or None)
        where = d.get("location", "")
        yield Component(
            type=ComponentType.LIBRARY,
            name=d["name"],
            version=d.get("version"),
            purl=purl,
            # the same distribution may be installed twice (two prefixes): one ref each
            bom_ref=f"{purl}?location={where}",
            licenses=[licenses.make_from_string(d["license"])] if d.get("license") else None,
            properties=[Property(name="build-graph:location", value=where)] if where else None,
        )
