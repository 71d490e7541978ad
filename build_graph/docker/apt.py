"""What apt would install, asked of the real apt inside an image.

`apt-get install --print-uris` in a container of the image (its own package database, its
own sources and keyrings): apt reads the archive's index, refuses one whose signature does
not verify or whose Valid-Until has passed, resolves the request as a build would, and
prints each `.deb` the install would fetch with its size and sha256 from the signed index.
Nothing is installed. Plain values in, plain rows out (aptlock/ makes them a lock).
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from build_graph.docker.containers import container, read_file, run_to_end
from build_graph.errors import BuildFailed

# 'http://deb.debian.org/debian/pool/main/g/gcc-12/gcc-12_12.2.0-14_amd64.deb'
#   gcc-12_12.2.0-14_amd64.deb 19305768 MD5Sum:<hex>
# (--print-uris prints the MD5 sum; the sha256 is read from the index with apt-cache show)
# (an archive whose index carries no MD5, as Debian's security archive, leaves it empty)
_URI_LINE = re.compile(r"^'(?P<url>[^'\s]+)' (?P<file>\S+) (?P<size>\d+)(?: \S+)?$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_INDEX, _INSTALLED, _END = "--- index records", "--- installed", "--- end"
_OUT = "/tmp/build-graph-apt"  # the answer, read whole after the container exits

# apt-get update's progress to stderr; the answer to a file: the install's plan, the
# index's record of each file it names (Package, Version, Architecture, Size, SHA256 as
# the signed index says), what the image has installed, and an end mark (an answer cut
# short is refused, never read as "nothing to install").
_SCRIPT = (
    "set -e; export DEBIAN_FRONTEND=noninteractive; "
    "apt-get update -q >&2; "
    'apt-get install -qq -y --no-install-recommends --print-uris "$@" > /tmp/uris; '
    f"{{ cat /tmp/uris; echo '{_INDEX}'; "
    r"sed -n 's/^.[^ ]* \([^_ ]*\)_\([^_ ]*\)_[^_ ]*\.deb .*/\1=\2/p' /tmp/uris "
    "| sed 's/%3a/:/g' | xargs -r apt-cache show --no-all-versions; "
    f"echo '{_INSTALLED}'; dpkg-query -W -f '${{db:Status-Abbrev}}${{Package}}\\n'; "
    f"echo '{_END}'; }} > {_OUT}"
)


def would_fetch(
    image: str, platform: str | None, packages: list[str]
) -> list[tuple[str, int, str, str]]:
    """(file, size, sha256, url) of every `.deb` installing `packages` ('name' or
    'name=version') in `image` would fetch. BuildFailed with apt's words when apt
    refuses (an unknown package, a version the archive no longer has, an index that
    does not verify)."""
    with container(image, ["sh", "-c", _SCRIPT, "sh", *packages], platform=platform) as box:
        code, output = run_to_end(box)
        answer = read_file(box, _OUT) if code == 0 else None
    if code != 0:
        said = [line for line in output.splitlines() if line.startswith(("E:", "W:"))]
        said = said or output.strip().splitlines()[-1:] or ["no output"]
        raise BuildFailed(
            f"apt in {image} could not resolve {' '.join(packages)}: {'; '.join(said[-4:])}"
        )
    return parse((answer or b"").decode("utf-8", "replace"), image, packages)


def parse(output: str, image: str, packages: list[str]) -> list[tuple[str, int, str, str]]:
    """The rows of the script's answer: each file --print-uris names, with the size and
    sha256 the index's record of that package, version and architecture gives. An answer
    without its end, a plan line that does not parse, a file without a record (or whose
    record carries no SHA256 or another size), or a requested package that is neither to
    be installed nor installed already is an error."""
    plan, _, rest = output.partition(_INDEX)
    index, _, rest = rest.partition(_INSTALLED)
    installed, end, _ = rest.partition(_END)
    if not end:
        raise BuildFailed(f"apt in {image}: its answer was cut short; run again")
    records: dict[tuple[str, str, str], dict[str, str]] = {}
    for block in index.strip().split("\n\n"):
        fields = {
            k.strip(): v.strip()
            for k, sep, v in (line.partition(":") for line in block.splitlines())
            if sep and not k[:1].isspace()
        }
        key = (fields.get("Package", ""), fields.get("Version", ""), fields.get("Architecture", ""))
        records[key] = fields
    rows = []
    for line in plan.splitlines():
        if not line.strip():
            continue
        match = _URI_LINE.match(line.strip())
        if match is None:
            raise BuildFailed(f"apt in {image}: a line of its plan is not one: {line[:200]!r}")
        file, size = match["file"], int(match["size"])
        parts = file.removesuffix(".deb").split("_")
        if len(parts) != 3:
            raise BuildFailed(f"apt in {image}: {file!r} is not a .deb file name")
        name, version, arch = parts[0], unquote(parts[1]), parts[2]
        record = records.get((name, version, arch), {})
        sha256 = record.get("SHA256", "")
        if not _SHA256.match(sha256) or record.get("Size") != str(size):
            raise BuildFailed(
                f"apt in {image}: the index has no SHA256 and size {size} for {file} "
                f"({name} {version}): an archive must carry SHA256 sums to be locked"
            )
        rows.append((file, size, sha256, match["url"]))
    have = {line[3:].strip() for line in installed.splitlines() if line.startswith("ii ")} | {
        r[0].split("_", 1)[0] for r in rows
    }
    missing = [p for p in packages if re.split("[=:]", p, maxsplit=1)[0] not in have]
    if missing:
        raise BuildFailed(
            f"apt in {image}: {', '.join(missing)} would be neither installed nor present "
            "(a virtual package? name the package that provides it)"
        )
    return rows
