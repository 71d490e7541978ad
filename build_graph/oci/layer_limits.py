"""The largest layer a registry takes, and the layers of an image past it.

A from-source torch tier with several CUDA archs carries one multi-GB layer, and some
registries refuse such a layer only when it is pushed (after hours of compiling) or serve it
only in part. `[layers] max_size` in images.toml names the limit; not set, the limit of a
registry this module knows applies (by its host). verify fails a layer past it before
promote, and push checks it before sending anything.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

GB = 1000**3
_BUILD_ARGS = re.compile(r"^RUN \|(\d+) ")  # a RUN's build args, as BuildKit's history says

# Hosts whose limit is published. GitHub: "The Container registry has a 10 GB size limit for
# each layer" (docs.github.com/en/packages/working-with-a-github-packages-registry/
# working-with-the-container-registry). Artifact Registry: "Maximum data retrieval per
# request: 9.9 GB" (cloud.google.com/artifact-registry/quotas, usage limits), so a bigger
# layer cannot be pulled in one request. Units read as decimal: the smaller of the readings.
KNOWN: tuple[tuple[str, int, str], ...] = (
    ("ghcr.io", 10 * GB, "ghcr.io's limit"),
    ("-docker.pkg.dev", 99 * GB // 10, "Artifact Registry's limit per request"),
)


@dataclass(frozen=True)
class LayerLimit:
    """The largest compressed layer the stack's registry takes, and where that was said."""

    size: int
    said_by: str  # "[layers] max_size" or "ghcr.io's limit"

    def __str__(self) -> str:
        return f"{amount(self.size)} per layer ({self.said_by})"


def known_limit(registry: str) -> LayerLimit | None:
    """The published limit of the registry `registry` (its host, or `host/path`) names."""
    host = registry.split("/", 1)[0].lower().rsplit(":", 1)[0]  # ghcr.io:443 is ghcr.io
    for suffix, size, said_by in KNOWN:
        if host == suffix or host.endswith(suffix if suffix.startswith("-") else "." + suffix):
            return LayerLimit(size, said_by)
    return None


def over(sizes: Sequence[int], limit: LayerLimit | None) -> list[tuple[int, int]]:
    """(index, size) of every layer past the limit, base first."""
    if limit is None:
        return []
    return [(i, size) for i, size in enumerate(sizes) if size > limit.size]


def problem(sizes: Sequence[int], limit: LayerLimit, steps: Sequence[str] = ()) -> str:
    """One line naming each layer past the limit (and the step that made it, where the
    image's history says), its size, the limit, and how to make it smaller."""
    named = []
    for index, size in over(sizes, limit):
        step = steps[index] if index < len(steps) and steps[index] else ""
        made = f", made by `{step_text(step)}`" if step else ""
        named.append(f"layer {index + 1} of {len(sizes)} is {amount(size)} compressed{made}")
    return (
        "; ".join(named)
        + f": the registry takes at most {limit}. Split the step that makes it (install the "
        "largest packages in a RUN of their own, or in a tier of their own), or set "
        "[layers] max_size where the registry takes more"
    )


def layer_steps(config: object) -> list[str]:
    """The step that made each layer, base first: the image config's history entries that
    made a layer (`empty_layer` ones made none), by their `created_by`; [] when the config
    has no history. A config is untrusted JSON: anything unexpected reads as no step."""
    history = config.get("history") if isinstance(config, dict) else None
    if not isinstance(history, list):
        return []
    return [
        str(entry.get("created_by") or "")
        for entry in history
        if isinstance(entry, dict) and not entry.get("empty_layer")
    ]


def amount(size: int) -> str:
    """'10.0 GB', '812.4 MB', '4.9 kB': decimal units, as registries count."""
    for unit, scale in (("GB", GB), ("MB", 1000**2)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size / 1000:.1f} kB"


def step_text(step: str, width: int = 80) -> str:
    """A history step as a person reads it: BuildKit's `RUN |4 A= B= C= D= /bin/sh -c cmd
    # buildkit` as `RUN cmd`, on one line, cut at `width`."""
    text = " ".join(step.split()).removesuffix(" # buildkit")
    if match := _BUILD_ARGS.match(text):
        words = text[match.end() :].split(" ")
        count = int(match[1])
        if all("=" in word for word in words[:count]):
            text = "RUN " + " ".join(words[count:])
    text = text.replace("/bin/sh -c ", "", 1)
    return text if len(text) <= width else text[: width - 3] + "..."
