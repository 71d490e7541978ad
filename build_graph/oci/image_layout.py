"""The OCI image layout's format (image-spec image-layout.md): the `oci-layout` file, the
`index.json` naming what the layout holds, and each blob at `blobs/sha256/<hex>`; as a
folder (docker/oci_layout.py, BuildKit's OCI exporter writes it) or a tar of one (an
archive: oci/archive.py, BuildKit's OCI exporter and `docker save`).
"""

from __future__ import annotations

from build_graph.oci.digest import Digest

MARKER = "oci-layout"
MARKER_BODY = b'{"imageLayoutVersion":"1.0.0"}'  # as written into the tars `docker load` reads
INDEX = "index.json"
BLOBS = "blobs/sha256"


def blob_name(digest: Digest) -> str:
    """'blobs/sha256/<hex>': where a layout holds the blob `digest`."""
    return f"{BLOBS}/{digest.hex}"
