"""The two-platform seed for scripts/services.sh, through build_graph's own registry reader.

  seed-index.py platform REF      prints 'os/architecture' of the image REF names (read
                                   through an index of one image: the containerd image
                                   store pushes every image so)
  seed-index.py index REF A B ..  PUTs under REF an OCI index of the platform images the
                                   refs A, B, ... name (their configs must state a platform)
"""

from __future__ import annotations

import json
import sys

from build_graph.oci.contents import OCI_INDEX, Contents
from build_graph.oci.platforms import stated_platform
from build_graph.oci.refs import parse_ref
from build_graph.registry import api


def image(reference: str) -> tuple[Contents, str]:
    """The platform image `reference` names (its contents and its config's platform)."""
    found = api.read_image(parse_ref(reference))
    assert found.image.config is not None  # read_image: an image manifest
    platform = stated_platform(json.loads(api.get_blob(found.ref, found.image.config)))
    if platform is None:
        raise SystemExit(f"{reference}: its config states no platform")
    return found.image, platform


def main(command: str, reference: str, *entries: str) -> None:
    if command == "platform":
        print(image(reference)[1])
        return
    manifests = []
    for entry in entries:
        named, platform = image(entry)
        os_, arch = platform.split("/")
        manifests.append({"mediaType": named.media_type, "digest": str(named.digest),
                          "size": named.size, "platform": {"architecture": arch, "os": os_}})
    body = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests},
                      indent=2).encode()
    print(api.put_manifest(parse_ref(reference), body, OCI_INDEX))


if __name__ == "__main__":
    main(*sys.argv[1:])
