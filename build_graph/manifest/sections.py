"""The sections of a manifest resolved on their own: sizes, the cache, verify, human tags."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from build_graph.errors import did_you_mean
from build_graph.layout import BuildFolder
from build_graph.manifest import schema, stack_schema
from build_graph.manifest.model import CacheSpec, VariantSpec, VerifySpec
from build_graph.manifest.rules import Report
from build_graph.manifest.values import conforms, fill_fields, parse_duration
from build_graph.oci.layer_limits import LayerLimit, amount, known_limit
from build_graph.signing.spec import KMS_SCHEME, SigningSpec

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*$", re.IGNORECASE)
_GCS_RE = re.compile(r"gs://([a-z0-9][a-z0-9._-]{1,220}[a-z0-9])(/[^\s]*)?")


def parse_size(text: str) -> int | None:
    """'20G', '500MiB', '1.5 GB' -> bytes (binary units); None if unparseable."""
    match = _SIZE_RE.match(text)
    if not match:
        return None
    power = " KMGT".index(match[2].upper() or " ")
    return int(float(match[1]) * 1024**power)


def resolve_layer_limit(manifest: schema.Manifest, report: Report) -> LayerLimit | None:
    """[layers] max_size, else the stack's registry's published limit, else none."""
    text = manifest.layers.max_size
    if text is None:
        return known_limit(manifest.stack.registry)
    size = parse_size(text)
    if not size:
        report.error("layers.max_size", f"{text!r} is not a size; write e.g. '9G'")
        return None
    known = known_limit(manifest.stack.registry)
    if known is not None and size > known.size:  # '10G' is 10 GiB: past ghcr.io's 10 GB
        report.note(
            "layers.max_size",
            f"{text!r} is {amount(size)} (binary units), more than "
            f"{known}: layers between the two pass verify and fail the push",
        )
    return LayerLimit(size, "[layers] max_size")


def fill(text: str, fields: Mapping[str, str], key: str, report: Report) -> str:
    """Fill {field}s; bad field syntax or an unknown field is reported (naming the known
    ones) and the text comes back unfilled."""
    try:
        return fill_fields(text, fields)
    except ValueError as exc:
        report.error(key, str(exc))
    except KeyError as exc:
        name = str(exc.args[0])
        report.error(
            key,
            f"unknown field {{{name}}}{did_you_mean(name, fields)}; "
            f"known: {', '.join(sorted(fields))}",
        )
    return text


def resolve_cache(cache: stack_schema.Cache, manifest: Path, report: Report) -> CacheSpec:
    root = manifest.parent
    url = cache.url or f"file://{BuildFolder.of(manifest).cache_store}"
    if url.startswith("file://"):
        folder = Path(url.removeprefix("file://"))
        url = f"file://{folder if folder.is_absolute() else (root / folder).resolve()}"
    elif not conforms(_GCS_RE, url):
        report.error(
            "cache.url",
            f"{url!r} is not a cache location; write "
            "'gs://bucket/prefix' or 'file://path' (or leave it out for a local folder)",
        )
    size = parse_size(cache.max_size)
    if size is None:
        report.error("cache.max_size", f"{cache.max_size!r} is not a size; write e.g. '20G'")
    every = parse_duration(cache.save_every)
    if every is None:
        report.error(
            "cache.save_every",
            f"{cache.save_every!r} is not a duration; write e.g. '20m', '1h' or '0s' "
            "(saved only when the compile ends)",
        )
    elif 0 < every < 300:
        report.note(
            "cache.save_every",
            f"{cache.save_every!r}: each save packs and uploads the whole cache on every core "
            "beside the compile; under 5m it may cost more than a killed run would lose",
        )
    return CacheSpec(
        url=url,
        max_size_bytes=size or 0,
        required=cache.required,
        save_every_s=every or 0.0,
    )


def resolve_signing(signing: stack_schema.Signing, manifest: Path, report: Report) -> SigningSpec:
    """Key references made absolute; every public key must exist (a runner may lack the
    private key: it is read when verify signs)."""
    root = manifest.parent

    def where(ref: str) -> str:
        return ref if ref.startswith(KMS_SCHEME) else str((root / ref).resolve())

    for i, ref in enumerate(signing.public_keys):
        if not ref.startswith(KMS_SCHEME) and not (root / ref).is_file():
            report.error(
                f"signing.public_keys[{i}]",
                f"no file {ref!r} beside {manifest.name}; name a PEM public key "
                "(`python -m build_graph keygen DIR` makes a pair) or a gcpkms:// key version",
            )
    if signing.required and not signing.public_keys:
        report.error(
            "signing.required",
            "signatures are required but signing.public_keys names no key to check them with",
        )
    return SigningSpec(
        key=where(signing.key) if signing.key else None,
        public_keys=tuple(where(ref) for ref in signing.public_keys),
        required=signing.required,
    )


def resolve_verify(
    spec: schema.Verify,
    versions: Mapping[str, str],
    fields: Mapping[str, str],
    key: str,
    report: Report,
) -> VerifySpec:
    size = None
    if spec.max_size is not None:
        size = parse_size(spec.max_size)
        if size is None:
            report.error(
                f"{key}.verify.max_size", f"{spec.max_size!r} is not a size; write e.g. '8G'"
            )
    return VerifySpec(
        python=spec.python or versions.get("python"),
        conda=spec.conda,
        single_python=spec.single_python,
        pip_check=spec.pip_check,
        packages=tuple(
            (n, fill(v, fields, f"{key}.verify.packages.{n}", report))
            for n, v in spec.packages.items()
        ),
        archs=spec.archs,
        max_size_bytes=size,
        smoke=tuple(spec.smoke),
        cuda_libraries=tuple(spec.cuda_libraries),
        gpu=spec.gpu,
        pip_check_allow=tuple(spec.pip_check_allow),
        torch_archs=spec.torch_archs,
    )


def check_variants(
    manifest: schema.Manifest, variants: tuple[VariantSpec, ...], report: Report
) -> None:
    """What holds across the resolved variants: human tags, and what a hermetic stack needs."""
    check_tags(variants, report)
    if not manifest.stack.hermetic:
        return
    if not manifest.apt.lock:
        report.error(
            "stack.hermetic",
            "a hermetic build installs system packages only from files a lock names: "
            "set [apt] lock = true (then `python -m build_graph lock`), or hermetic = false",
        )
    git = {
        f"tiers.{tier.name}.compile.sources.{source.name}"
        for variant in variants
        for tier in variant.tiers
        for source in (tier.compile.sources if tier.compile else ())
        if source.kind == "git"
    }
    for key in sorted(git):
        report.error(
            key,
            "a git source is fetched inside the compile container, which has no network "
            "in a hermetic stack: name a release archive with its sha256 "
            "('https://.../v1.2.tar.gz#sha256=<hex>', fetched and checked before the "
            "compile), or set [stack] hermetic = false",
        )


def check_tags(variants: tuple[VariantSpec, ...], report: Report) -> None:
    """A human tag must name one image: unique per tier across variants; 'latest' is ours."""
    seen: dict[tuple[str, str], str] = {}
    for variant in variants:
        for tier in variant.tiers:
            for tag in tier.tags:
                if tag == "latest":
                    report.error(
                        f"tiers.{tier.name}.tags",
                        "'latest' is moved by promote to "
                        "the verified default variant; remove it from tags",
                    )
                    continue
                other = seen.get((tier.name, tag))
                if other is not None:
                    where = (
                        f"variants {other} and {variant.name}"
                        if other != variant.name
                        else f"variant {variant.name}"
                    )
                    report.error(
                        f"tiers.{tier.name}.tags",
                        f"tag {tag!r} is given twice ({where}); make it unique, "
                        "e.g. '{torch}-{cuda_tag}'",
                    )
                seen[(tier.name, tag)] = variant.name
