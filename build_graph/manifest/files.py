"""The files a manifest names: templates found, contexts and sources below the manifest.

A context or local source that does not exist, or that (symlinks resolved) leads outside
the manifest's folder, is a keyed error; a source URL must match the source grammar.
"""

from __future__ import annotations

from pathlib import Path

from build_graph.errors import did_you_mean
from build_graph.fs import inside
from build_graph.manifest import schema
from build_graph.manifest.model import Source
from build_graph.manifest.rules import Report
from build_graph.manifest.values import ARCHIVE_URL_RE, CONTEXT_RE, SOURCE_URL_RE, conforms


def _find_template(name: str, dirs: tuple[Path, ...]) -> Path | None:
    for folder in dirs:
        if (folder / name).is_file():
            return folder / name
    return None


def check_files(
    manifest: schema.Manifest, root: Path, dirs: tuple[Path, ...], report: Report
) -> None:
    known = sorted({p.name for d in dirs if d.is_dir() for p in d.iterdir()})
    for name, tier in manifest.tiers.items():
        templates = [("template", tier.template)]
        if tier.compile:
            templates.append(("compile.script", tier.compile.script))
        for key, template in templates:
            if _find_template(template, dirs) is None:
                where = " or ".join(str(d) for d in dirs)
                report.error(
                    f"tiers.{name}.{key}",
                    f"no template {template!r} in {where}{did_you_mean(template, known)}",
                )
        for entry in tier.context:
            _check_local(root, entry, f"tiers.{name}.context", report)


def _check_local(root: Path, entry: str, key: str, report: Report) -> None:
    """A context or source path exists and, symlinks resolved, stays below the manifest."""
    path = root / entry
    if not path.exists():
        report.error(key, f"{entry!r} does not exist (paths are relative to {root})")
    elif not inside(root, path):
        report.error(
            key,
            f"{entry!r} leads to {path.resolve()}, outside the manifest's "
            f"folder {root}; contexts and sources are paths below it",
        )


def check_source(root: Path, entry: Source, key: str, report: Report) -> None:
    source = entry.text
    if entry.kind == "archive":
        if not conforms(ARCHIVE_URL_RE, source):
            report.error(
                key,
                f"{source!r} is not an archive URL: write https://host/path/"
                "name-1.0.tar.gz#sha256=<the archive's 64 hex sha256> (.tar.gz, "
                ".tgz, .tar.bz2, .tar.xz or .zip)",
            )
    elif entry.kind == "git":
        if not conforms(SOURCE_URL_RE, source):
            report.error(
                key,
                f"{source!r} is not a source URL: write https://, ssh:// or "
                "git:// URL with an optional @ref (letters, digits, ._/+-), "
                "no shell characters",
            )
    elif not conforms(CONTEXT_RE, source):
        report.error(key, f"{source!r} is neither a URL nor a relative path below {root}")
    else:
        _check_local(root, source, key, report)
