"""The SBOM: dpkg's status file and Python's distributions read by the in-image inventory,
turned into CycloneDX JSON that the library's own validator accepts."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

from build_graph.errors import BuildFailed
from build_graph.oci.digest import Digest
from build_graph.stages.sbom import LOCK_PROPERTY, cyclonedx_json
from build_graph.verify.in_image import inventory

STATUS = textwrap.dedent("""\
    Package: python3
    Status: install ok installed
    Architecture: amd64
    Source: python3-defaults
    Version: 3.11.2-1+b1
    Description: interactive high-level object-oriented language
     (continuation: Status: install ok installed)

    Package: removed-one
    Status: deinstall ok config-files
    Version: 1.0

    Package: libc6
    Status: install ok installed
    Architecture: amd64
    Version: 2.36-9+deb12u10
    """)
DIGEST = Digest.of(b"an image manifest")


def test_dpkg_status_lists_only_installed_packages(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text(STATUS)
    assert inventory.debian_packages(str(status)) == [
        {"name": "libc6", "version": "2.36-9+deb12u10", "architecture": "amd64", "source": "libc6"},
        {
            "name": "python3",
            "version": "3.11.2-1+b1",
            "architecture": "amd64",
            "source": "python3-defaults",
        },
    ]
    assert inventory.debian_packages(str(tmp_path / "none")) == []  # no dpkg: no packages
    # verify's apt lock check: no database is no answer, not "nothing installed"
    assert inventory.dpkg_database(str(tmp_path / "none")) is None
    assert inventory.dpkg_database(str(status)) == inventory.debian_packages(str(status))


def test_python_distributions_say_name_version_license_and_where() -> None:
    found = {d["name"].lower(): d for d in inventory.python_distributions()}
    assert found["jinja2"]["version"] and found["jinja2"]["location"].endswith("site-packages")
    assert "BSD" in found["jinja2"]["license"]


def test_the_sbom_is_valid_cyclonedx_and_lists_every_package(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text(STATUS)
    items = {
        "debian": inventory.debian_packages(str(status)),
        "python": [
            {
                "name": "fastext",
                "version": "1.0.0",
                "license": "MIT",
                "location": "/usr/local/lib/python3.11/dist-packages",
            },
            {"name": "odd", "version": "1", "license": "a custom licence text", "location": "/x"},
            {"name": 7, "version": "bad entry from the image"},
        ],
    }
    lock = "images.pylock/runner.linux-amd64.toml sha256:" + "ab" * 32
    text = cyclonedx_json(items, "127.0.0.1:5000/quickstart/runner", DIGEST, lock)
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    document = json.loads(text)
    assert document["metadata"]["properties"] == [{"name": LOCK_PROPERTY, "value": lock}]
    purls = sorted(c["purl"] for c in document["components"])
    assert purls == [
        "pkg:deb/debian/libc6@2.36-9%2Bdeb12u10?arch=amd64",
        "pkg:deb/debian/python3@3.11.2-1%2Bb1?arch=amd64",
        "pkg:pypi/fastext@1.0.0",
        "pkg:pypi/odd@1",
    ]
    assert document["metadata"]["component"]["version"] == str(DIGEST)


def test_no_inventory_no_sbom() -> None:
    with pytest.raises(BuildFailed, match="the probe listed no packages"):
        cyclonedx_json(None, "r/x", DIGEST)


def test_an_ubuntu_image_s_packages_are_named_as_ubuntu_s() -> None:
    """Scanners match advisories on the purl's vendor and distro: Ubuntu's openssl is not
    Debian's."""
    from build_graph.stages.sbom import _debian

    packages = [{"name": "openssl", "version": "3.0.2-0ubuntu1.18", "architecture": "amd64"}]
    [component] = list(_debian(packages, {"id": "ubuntu", "version_id": "22.04"}))
    assert str(component.purl) == (
        "pkg:deb/ubuntu/openssl@3.0.2-0ubuntu1.18?arch=amd64&distro=ubuntu-22.04"
    )
