"""Turn a structurally valid Manifest into a frozen Stack: variants, version fields, checks."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path

from build_graph.errors import ConfigError, did_you_mean
from build_graph.gpu import releases
from build_graph.gpu.releases import Lookup, shipped_only
from build_graph.layout import TOOL_NAMES
from build_graph.manifest import schema
from build_graph.manifest.files import check_files, check_source
from build_graph.manifest.grammar import requirement
from build_graph.manifest.graph import CycleError, topological_order
from build_graph.manifest.model import (
    DEFAULT_VARIANT,
    CompileSpec,
    FrozenDict,
    GpuSpec,
    Stack,
    TierSpec,
    VariantSpec,
    format_fields,
)
from build_graph.manifest.platforms import check_arm64_gpus, resolve_platforms
from build_graph.manifest.rules import RULES, Report, Where
from build_graph.manifest.sections import (
    check_variants,
    fill,
    resolve_cache,
    resolve_layer_limit,
    resolve_signing,
    resolve_verify,
)
from build_graph.manifest.values import IMAGE_RE, TAG_RE, conforms, parse_source
from build_graph.oci.compression import Compression

# `doit <tier>` builds a tier: its name may not be a doit command, nor `tiers` (a
# dodo.py written before stages/pipeline.py has a task_tiers), nor a stage's
# (run/stack.py's load_stack checks those, against the stages' table).
RESERVED = frozenset(
    {
        "tiers",
        "list",
        "info",
        "run",
        "help",
        "clean",
        "forget",
        "ignore",
        "dumpdb",
        "strace",
        "tabcompletion",
        "reset-dep",
        "auto",
    }
)


@cache
def shipped_templates() -> Path:
    """The shipped templates: package data beside this package in an installed wheel
    (pyproject.toml maps the top-level templates/ to build_graph/templates), else the
    checkout's templates/ (a source tree, an editable install)."""
    package = Path(__file__).resolve().parents[1]
    for folder in (package / "templates", package.parent / "templates"):
        if folder.is_dir():
            return folder
    raise FileNotFoundError(f"no templates/ beside {package}: reinstall build-graph")


def resolve_stack(path: Path, manifest: schema.Manifest, lookup: Lookup = shipped_only) -> Stack:
    """Resolve every variant and apply every rule; raise ConfigError listing all problems.
    `lookup` says where torch pairings come from (only `check` passes one that asks the
    package index)."""
    report = Report(path, lookup)
    root = path.parent
    template_dirs = tuple(dict.fromkeys([root / "templates", shipped_templates()]))
    order = _check_graph(manifest, report)
    check_files(manifest, root, template_dirs, report)
    cache = resolve_cache(manifest.cache, path, report)
    signing = resolve_signing(manifest.signing, path, report)
    layer_limit = resolve_layer_limit(manifest, report)
    names = list(manifest.variants) or [DEFAULT_VARIANT]
    for taken in sorted(TOOL_NAMES.intersection(manifest.variants)):
        report.error(
            f"variants.{taken}",
            f"{taken!r} names one of build-graph's own folders "
            f"under build/ ({', '.join(sorted(TOOL_NAMES))}); rename the variant",
        )
    default = manifest.stack.default_variant or names[0]
    if default not in names:
        report.error(
            "stack.default_variant", f"no variant named {default!r}{did_you_mean(default, names)}"
        )
    variants = tuple(_resolve_variant(manifest, name, order, report) for name in names)
    check_variants(manifest, variants, report)
    if report.issues:
        raise ConfigError(report.issues, report.notes)
    return Stack(
        manifest=path,
        name=manifest.stack.name,
        registry=manifest.stack.registry,
        description=manifest.stack.description,
        cache=cache,
        variants=variants,
        default_variant=default,
        template_dirs=template_dirs,
        has_variants=bool(manifest.variants),
        notes=tuple(report.notes),
        signing=signing,
        compression=Compression(manifest.layers.compression, manifest.layers.level),
        layer_limit=layer_limit,
        apt_locked=manifest.apt.lock,
        apt_snapshots=tuple(manifest.apt.snapshots.items()),
        hermetic=manifest.stack.hermetic,
    )


def _check_graph(manifest: schema.Manifest, report: Report) -> list[str]:
    deps: dict[str, list[str]] = {}
    for name, tier in manifest.tiers.items():
        if name in RESERVED:
            report.error(
                f"tiers.{name}",
                f"{name!r} is a doit command, so "
                f"`doit {name}` could not mean the tier; rename the tier",
            )
        deps[name] = []
        refs = [("parent", tier.parent)]
        if tier.compile:
            refs.append(("compile.builder", tier.compile.builder))
        for key, ref in refs:
            if ref is None:
                continue
            if ref not in manifest.tiers:
                report.error(
                    f"tiers.{name}.{key}",
                    f"no tier named {ref!r}{did_you_mean(ref, manifest.tiers)}",
                )
            deps[name].append(ref)
    try:
        return topological_order(deps)
    except CycleError as exc:
        report.error(
            f"tiers.{exc.cycle[0]}.parent",
            f"tiers depend on each other in a cycle: {exc}; break the loop",
        )
        return list(manifest.tiers)


def _variant_keys(manifest: schema.Manifest, name: str) -> set[str]:
    variant = manifest.variants.get(name)
    if variant is None:
        return set()
    keys = {f"versions.{k}" for k in variant.versions}
    if variant.gpu:
        keys |= {f"gpu.{k}" for k in variant.gpu.model_fields_set}
    return keys


def _resolve_variant(
    manifest: schema.Manifest, name: str, order: list[str], report: Report
) -> VariantSpec:
    variant = manifest.variants.get(name, schema.Variant())
    overridden = _variant_keys(manifest, name)

    def where(section: str, key: str) -> str:
        if f"{section}.{key}" in overridden:
            return f"variants.{name}.{section}.{key}"
        return f"{section}.{key}" + (f" (variant {name})" if manifest.variants else "")

    base_versions = {k: v for k, v in manifest.versions.model_dump().items() if v is not None}
    versions = follow_torch({**base_versions, **variant.versions}, where, report)
    gpu_data = manifest.gpu.model_dump()
    if variant.gpu:
        gpu_data.update({k: getattr(variant.gpu, k) for k in variant.gpu.model_fields_set})
    gpu = GpuSpec(tuple(gpu_data["arch_list"]), gpu_data["ptx"], tuple(gpu_data["targets"]))
    for rule in RULES:
        rule(versions, gpu, where, report)
    fields = format_fields(versions, name)
    platforms = resolve_platforms(manifest, name, order, report)
    tiers = tuple(
        _resolve_tier(n, manifest.tiers[n], name, versions, fields, report, platforms[n])
        for n in order
        if n in manifest.tiers
    )
    check_arm64_gpus(tiers, versions, gpu, where, report)
    return VariantSpec(
        name=name,
        description=variant.description,
        versions=FrozenDict(versions),
        gpu=gpu,
        tiers=tiers,
        fields=FrozenDict(fields),
    )


def follow_torch(versions: dict[str, str], where: Where, report: Report) -> dict[str, str]:
    """triton follows from torch when the manifest leaves it out: what torch's own Linux
    wheel requires (the shipped index facts, gpu/torch_releases.json), said in a note naming
    the key to set instead. `cuda` is never filled: verify checks a stated `cuda` against
    torch.version.cuda, and a CPU-only torch (None) must not fail for a line it never had;
    the CUDA line torch's wheel is built for is said in a note instead."""
    row = releases.shipped().torch_row(versions["torch"]) if "torch" in versions else None
    if row is None:
        return versions
    if "triton" not in versions and row.triton:
        named = releases.named_version(row.triton)
        if named is not None:
            versions["triton"] = named
            report.note(
                where("versions", "triton"),
                f"triton {named}: what torch "
                f"{versions['torch']}'s wheel requires (triton{row.triton}); set "
                "versions.triton to choose",
            )
    if "cuda" not in versions and row.cuda:
        report.note(
            where("versions", "cuda"),
            f"not set: torch {versions['torch']}'s PyPI "
            f"wheel is built for CUDA {row.cuda}; set versions.cuda (e.g. "
            f'"{row.cuda}") for verify to check it, or leave it out for a CPU torch',
        )
    return versions


def _resolve_tier(
    name: str,
    tier: schema.Tier,
    variant: str,
    versions: Mapping[str, str],
    fields: Mapping[str, str],
    report: Report,
    platforms: tuple[str, ...] = (),
) -> TierSpec:
    key = f"tiers.{name}"
    from_image = None
    if tier.from_ is not None:
        from_image = fill(tier.from_, fields, f"{key}.from", report)
        if "{" not in from_image and not conforms(IMAGE_RE, from_image):
            report.error(
                f"{key}.from",
                f"{from_image!r} is not an image reference "
                "(for example 'nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04')",
            )
    tags = tuple(fill(t, fields, f"{key}.tags", report) for t in tier.tags)
    for tag in tags:
        if "{" not in tag and not conforms(TAG_RE, tag):
            report.error(
                f"{key}.tags",
                f"{tag!r} is not a Docker tag (letters, digits, '_', '.', '-'; at most 128)",
            )
    packages = tuple(
        fill(p, fields, f"{key}.packages.{i}", report) for i, p in enumerate(tier.packages)
    )
    for i, package in enumerate(packages):
        try:
            requirement(package)
        except ValueError as exc:
            report.error(f"{key}.packages.{i}", str(exc))
    args = tuple(
        (k, fill(v, fields, f"{key}.build_args.{k}", report)) for k, v in tier.build_args.items()
    )
    return TierSpec(
        name=name,
        variant=variant,
        parent=tier.parent,
        from_image=from_image,
        template=tier.template,
        description=fill(tier.description, fields, f"{key}.description", report),
        context=tuple(tier.context),
        exclude=tuple(tier.exclude),
        packages=packages,
        system_packages=tuple(tier.system_packages),
        build_args=args,
        tags=tags,
        compile=_resolve_compile(tier.compile, fields, key, report),
        verify=resolve_verify(tier.verify, versions, fields, key, report),
        platforms=platforms,
    )


def _resolve_compile(
    spec: schema.Compile | None, fields: Mapping[str, str], key: str, report: Report
) -> CompileSpec | None:
    if spec is None:
        return None
    sources = tuple(
        parse_source(n, fill(s, fields, f"{key}.compile.sources.{n}", report))
        for n, s in spec.sources.items()
    )
    for source in sources:
        check_source(report.file.parent, source, f"{key}.compile.sources.{source.name}", report)
    env = tuple((n, fill(v, fields, f"{key}.compile.env.{n}", report)) for n, v in spec.env.items())
    return CompileSpec(
        builder=spec.builder, script=spec.script, sources=sources, env=env, outputs=spec.outputs
    )
