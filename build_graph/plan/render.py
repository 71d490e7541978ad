"""Jinja rendering of tier Dockerfiles and compile scripts; files rewritten only on change."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from build_graph import settings
from build_graph.aptlock.state import Steps
from build_graph.errors import TemplateError
from build_graph.layout import (
    CCACHE_DIR,
    HOST_CA,
    OUT_DIR,
    PYWHEELS_DIR,
    PYWHEELS_MOUNT,
    SOURCES_DIR,
    SRC_DIR,
    WHEELS_DIR,
)
from build_graph.manifest.model import Stack, TierSpec, VariantSpec

if TYPE_CHECKING:
    from build_graph.aptlock.state import Recorder
    from build_graph.pylock.state import LockState

if TYPE_CHECKING:  # Jinja is imported only when something is rendered (not on a no-op)
    import jinja2


def environment(stack: Stack) -> jinja2.Environment:
    """The Jinja environment: the manifest's templates/ first, then the shipped ones."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(d) for d in stack.template_dirs]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # Dockerfiles and shell, not HTML
    )
    env.filters["shquote"] = shlex.quote
    env.filters["dockerquote"] = dockerquote
    env.filters["execform"] = execform
    env.filters["pin"] = lambda name, versions: f"{name}=={versions[name]}"
    env.filters["shjoin"] = lambda items: " ".join(shlex.quote(str(i)) for i in items)
    # A global, so the macros imported without context see it (_macros.j2's pip_mounts).
    env.globals["host_ca"] = {"path": HOST_CA, "secret": settings.CA_SECRET, "env": settings.CA_ENV}
    # The tier's apt installs, answered by the recorder of the tier being rendered.
    env.globals["apt"] = Steps()
    return env


def render_recorded(
    env: jinja2.Environment, template: str, context: Mapping[str, Any], apt: Recorder
) -> str:
    """`render`, with `apt` answering the template's apt installs (aptlock/state.py)."""
    steps = env.globals["apt"]
    assert isinstance(steps, Steps)
    steps.current = apt
    try:
        return render(env, template, context)
    finally:
        steps.current = None


def dockerquote(value: object) -> str:
    """A double-quoted Dockerfile word (ARG/ENV/LABEL value) that Docker reads literally.

    Inside double quotes Docker's lexer takes \\", \\\\ and \\$ as escapes, so the JSON
    quoting of " and \\ carries over and '$' is escaped: '$HOME' stays '$HOME', never the
    builder's variable. Not Jinja's `tojson`: that escapes &, <, > and ' as \\u0026 etc. for
    HTML, and Docker keeps such escapes literally. Values are single-line (the config
    grammar ensures it).
    """
    return json.dumps(str(value), ensure_ascii=False).replace("$", "\\$")


def execform(words: list[object]) -> str:
    """An exec-form instruction's JSON array (ENTRYPOINT, CMD): one argument per word,
    whatever quotes or shell characters a word holds. Docker does no variable
    substitution in exec form."""
    return json.dumps([str(w) for w in words])


def tier_context(
    stack: Stack,
    variant: VariantSpec,
    tier: TierSpec,
    base_image: str,
    builder_image: str | None = None,
    commits: Mapping[str, str] | None = None,
    platform: str | None = None,
    python: LockState | None = None,
) -> dict[str, Any]:
    """Everything a template may use; StrictUndefined makes any other name an error.
    `platform`: 'linux/arm64' for a tier built per platform, None for the build host's."""
    return {
        "stack": {"name": stack.name, "registry": stack.registry},
        "variant": variant.name,
        "versions": variant.fields,
        "gpu": {
            "arch_list": list(variant.gpu.arch_list),
            "ptx": variant.gpu.ptx,
            "targets": list(variant.gpu.targets),
            "torch_cuda_arch_list": variant.gpu.torch_cuda_arch_list,
        },
        "tier": {
            "name": tier.name,
            "description": tier.description,
            "packages": list(tier.packages),
            "system_packages": list(tier.system_packages),
            "build_args": dict(tier.build_args),
            "context": list(tier.context),
            "compiles": tier.compile is not None,
        },
        "compile": _compile_context(tier, commits or {}),
        "base_image": base_image,
        "builder_image": builder_image,
        "platform": platform,
        "python_lock": _python_lock(stack, python),
        "paths": {
            "src": SRC_DIR,
            "out": OUT_DIR,
            "ccache": CCACHE_DIR,
            "wheels": WHEELS_DIR,
            "sources": SOURCES_DIR,
        },
    }


def _python_lock(stack: Stack, python: LockState | None) -> dict[str, Any]:
    """The tier's locked requirement lines, its file (relative to the manifest's folder) and
    whether it is missing or stale (then the Dockerfile refuses to build: a run resolves it
    first, see stages/python_pin.py)."""
    if python is None or python.request is None or python.path is None:
        return {"lines": [], "file": "", "missing": False, "hermetic": stack.hermetic}
    return {
        "lines": python.lines,
        "file": python.path.relative_to(stack.root).as_posix(),
        "missing": not python.fresh,
        # a hermetic stack's pip step installs the lock's wheels from the build context
        # (stages/pywheels.py): no index, no network
        "hermetic": stack.hermetic,
        "source": PYWHEELS_DIR,
        "mount": PYWHEELS_MOUNT,
    }


def _compile_context(tier: TierSpec, commits: Mapping[str, str]) -> dict[str, Any]:
    """Sources, env, outputs; `commits`: source name -> the commit images.lock pins its
    git source to ('' when not pinned yet)."""
    if tier.compile is None:
        return {"sources": {}, "commits": {}, "git": {}, "env": {}, "outputs": ""}
    sources = tier.compile.sources
    git = {
        s.name: {"url": s.location, "ref": s.ref, "commit": commits.get(s.text, "")}
        for s in sources
        if s.kind == "git"
    }
    return {
        "sources": {s.name: s.text for s in sources},
        "env": dict(tier.compile.env),
        "commits": {s.name: commits.get(s.text, "") for s in sources},
        "git": git,
        "outputs": tier.compile.outputs,
    }


def render(env: jinja2.Environment, template: str, context: Mapping[str, Any]) -> str:
    """Render one template; errors name the template, the line and the problem."""
    import jinja2

    try:
        text = env.get_template(template).render(context)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"{exc.filename or template}:{exc.lineno}: {exc.message}") from None
    except jinja2.TemplateNotFound as exc:
        raise TemplateError(
            f"{template}: includes {exc.name!r}, which is not in any template folder"
        ) from None
    except jinja2.UndefinedError as exc:
        where = _template_frame(exc, template)
        raise TemplateError(
            f"{where}: {exc.message}; define it or remove its use "
            "(names available: stack, variant, versions, gpu, tier, "
            "compile, base_image, builder_image, platform, python_lock, paths, apt, host_ca)"
        ) from None
    except Exception as exc:  # a template bug (bad filter use, type error): name the line
        where = _template_frame(exc, template)
        raise TemplateError(f"{where}: {type(exc).__name__}: {exc}") from None
    # Macros that emit nothing leave blank runs; keep the output tidy for golden files.
    return re.sub(r"\n{3,}", "\n\n", text).lstrip("\n")


def _template_frame(exc: BaseException, fallback: str) -> str:
    """'file.j2:LINE' of the innermost template frame in the traceback."""
    found = fallback
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.endswith(".j2") or filename.startswith("<template>"):
            found = f"{filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found
