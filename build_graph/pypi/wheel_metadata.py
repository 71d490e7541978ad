"""A wheel's `*.dist-info/METADATA`, read by HTTP range requests (no whole download).

PEP 658's `.metadata` files are the cheap way, but not every index serves them (on the
machine this was written on pypi.org's answered 404). A wheel is a zip: its end record and
central directory sit at the tail, so the stdlib zipfile over a range-reading file object
reads the tail, the directory, then the one member: for a 0.5 GiB torch wheel about 1-2 MiB
in 3-4 requests. Sizes are checked before reading, and zipfile checks the member's CRC.
"""

from __future__ import annotations

import re
import zipfile
from email.message import Message
from email.parser import BytesParser

from build_graph.errors import IndexAnswerRefused
from build_graph.pypi.fetch import RangeFile
from build_graph.settings import redact

# torch's central directory is about 1 MiB (some 10,000 members); 32 MiB is far above it.
READ_BUDGET = 32 << 20
MAX_METADATA = 1 << 20
_METADATA = re.compile(r"^[A-Za-z0-9_.+-]+\.dist-info/METADATA$")


def read_metadata(url: str, budget: int = READ_BUDGET) -> Message:
    """The parsed METADATA of the wheel at `url`; IndexAnswerRefused if it is not a wheel."""
    with RangeFile(url, budget) as remote:
        try:
            archive = zipfile.ZipFile(remote)
            names = [info for info in archive.infolist() if _METADATA.match(info.filename)]
            if len(names) != 1:
                raise IndexAnswerRefused(
                    f"{redact(url)}: expected one *.dist-info/METADATA, found "
                    f"{len(names)}; not a wheel"
                )
            member = names[0]
            if member.file_size > MAX_METADATA or member.compress_size > MAX_METADATA:
                raise IndexAnswerRefused(
                    f"{redact(url)}: {member.filename} claims "
                    f"{member.file_size} bytes (more than {MAX_METADATA})"
                    "; refused"
                )
            data = archive.read(member)
        except (
            zipfile.BadZipFile,
            zipfile.LargeZipFile,
            EOFError,
            ValueError,
            NotImplementedError,
        ) as exc:
            raise IndexAnswerRefused(f"{redact(url)}: not a readable wheel ({exc})") from None
    if len(data) != member.file_size:
        raise IndexAnswerRefused(
            f"{redact(url)}: {member.filename} is {len(data)} bytes, its "
            f"directory entry says {member.file_size}"
        )
    return BytesParser().parsebytes(data)
