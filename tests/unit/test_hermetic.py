"""`[stack] hermetic`: what it needs (an apt lock, no git sources), what it renders (a pip
step that installs the lock's wheels from files with no network), what it hashes (every
tier with a pip step gets another tag; the others keep theirs), and how a failed step is
named. Real builds: tests/integration/test_hermetic.py."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from build_graph.cli.main import main
from build_graph.docker.buildkit import failed_step, offline_hint
from build_graph.errors import BuildFailed, ConfigError, IndexAnswerRefused, OptionError
from build_graph.manifest.load import load
from build_graph.plan.plan import plan
from build_graph.pypi import simple
from build_graph.stages import inputs, pywheels
from tests.helpers import MINIMAL, REPO, config_errors
from tests.unit.test_plan import quickstart_copy


def hermetic(manifest: Path) -> Path:
    text = manifest.read_text()
    manifest.write_text(text.replace('registry = "', 'hermetic = true\nregistry = "', 1))
    return manifest


def test_a_hermetic_stack_needs_its_system_packages_locked(tmp_path: Path) -> None:
    errors = config_errors(
        tmp_path, MINIMAL.replace('name = "demo"', 'name = "demo"\nhermetic = true')
    )
    assert len(errors) == 1 and errors[0].startswith("stack.hermetic: "), errors
    assert "[apt] lock = true" in errors[0]


def test_a_git_source_is_refused_by_its_key(tmp_path: Path) -> None:
    text = (
        MINIMAL.replace('name = "demo"', 'name = "demo"\nhermetic = true')
        + "\n[apt]\nlock = true\n"
        + '\n[tiers.tools]\nfrom = "debian:bookworm-slim"\ntemplate = "builder.Dockerfile.j2"\n'
        + '\n[tiers.ext]\nparent = "base"\ntemplate = "python-runtime.Dockerfile.j2"\n'
        + '[tiers.ext.compile]\nbuilder = "tools"\nscript = "s.sh.j2"\n'
        + 'sources = { lib = "https://github.com/example/lib.git@v1.0" }\n'
    )
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "s.sh.j2").write_text("true\n")
    errors = config_errors(tmp_path, text)
    assert [e.split(": ")[0] for e in errors] == ["tiers.ext.compile.sources.lib"], errors
    assert "no network" in errors[0] and "#sha256=" in errors[0]


def test_the_pip_step_installs_the_locks_files_with_no_network(tmp_path: Path) -> None:
    before = {t.key: t for t in plan(load(quickstart_copy(tmp_path / "a")))}
    after = {t.key: t for t in plan(load(hermetic(quickstart_copy(tmp_path / "b"))))}
    with_pip = [k for k, t in before.items() if "# Locked in " in t.dockerfile]
    assert with_pip, "the quickstart has no locked pip step"
    for key in with_pip:
        lines = after[key].dockerfile.split("# Locked in ", 1)[1].splitlines()[1:]
        ends = next(i for i, line in enumerate(lines) if not line.endswith("\\"))
        step = "\n".join(lines[: ends + 1])  # the RUN instruction after the comment
        assert "--mount=type=bind,source=pywheels,target=/tmp/pywheels --network=none" in step
        assert "--no-index --find-links /tmp/pywheels" in step and "--require-hashes" in step
        assert "id=pipconf" not in step  # no index to sign in to
        assert after[key].content_hash != before[key].content_hash, key
    # every tier and every compile gets another hash, not only those with a pip step: what
    # was built with the host's network is not taken for a build without it
    assert all(after[k].content_hash != before[k].content_hash for k in before)
    assert after["fastext"].compile_hash != before["fastext"].compile_hash


# BuildKit's plain progress when a RUN step fails (buildx 0.29, the docker driver)
FAILED = """\
#9 [3/3] RUN python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9/')"
#9 0.311 urllib.error.URLError: <urlopen error [Errno 111] Connection refused>
#9 ERROR: process "/bin/sh -c python3 -c ..." did not complete successfully: exit code: 1
------
 > [3/3] RUN python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9/')":
------
Dockerfile:14
--------------------
  12 |     ENV PYTHONPATH=/workspace
  13 |     WORKDIR /workspace
  14 | >>> RUN python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9/')"
  15 |     LABEL a=b
--------------------
ERROR: failed to solve: process "/bin/sh -c python3 -c ..." did not complete successfully
"""


def test_a_failed_step_is_named_with_its_line() -> None:
    step = failed_step(FAILED.splitlines())
    assert step is not None and step.startswith('`RUN python3 -c "import urllib.request;')
    assert step.endswith("(Dockerfile:14)")
    hint = offline_hint("training", FAILED.splitlines())
    assert "of training ran with no network ([stack] hermetic = true)" in hint
    assert failed_step(["#5 ERROR: failed to read dockerfile"]) is None
    assert "a step of training ran with no network" in offline_hint("training", ["no step"])


def test_fetch_names_an_unknown_tier_and_refuses_a_stale_lock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = quickstart_copy(tmp_path)
    assert main(["fetch", "nosuch", "--manifest", str(manifest)]) == OptionError.exit_code
    assert "no tier named nosuch in " in capsys.readouterr().err
    # a new pip: the builder's Python lock no longer answers images.toml, so what to fetch
    # is not known (nothing is fetched for that tier, no index is asked), and it says so
    manifest.write_text(manifest.read_text().replace('pip = "26.3"', 'pip = "26.4"'))
    assert main(["fetch", "builder", "--manifest", str(manifest)]) == BuildFailed.exit_code
    said = capsys.readouterr()
    assert "builder: a lock is missing or stale" in said.err
    assert "run `python -m build_graph lock" in said.err
    assert "the team's store: " in said.out


def test_a_multi_line_step_is_named_by_its_first_line() -> None:
    """BuildKit marks every line of the failing instruction: the first names it."""
    tail = [
        "#12 ERROR: process did not complete successfully: exit code: 1",
        "Dockerfile:18",
        "--------------------",
        "  17 |     # Locked in images.pylock/base.linux-amd64.toml",
        "  18 | >>> RUN --mount=type=bind,source=pywheels,target=/tmp/pywheels printf '%s\\n' \\",
        "  19 | >>>       'numpy==2.3.5 --hash=sha256:00' \\",
        "  20 | >>>  && rm /tmp/requirements.lock",
        "--------------------",
    ]
    step = failed_step(tail)
    assert step is not None and step.startswith("`RUN --mount=type=bind,source=pywheels")
    assert step.endswith("(Dockerfile:18)"), step


def test_an_add_of_a_url_is_refused_when_planned(tmp_path: Path) -> None:
    manifest = hermetic(quickstart_copy(tmp_path))
    shipped = REPO / "templates" / "training.Dockerfile.j2"
    (manifest.parent / "templates" / shipped.name).write_text(
        shipped.read_text() + "\nADD https://example.com/data.tar.gz /data/\n"
    )
    with pytest.raises(ConfigError) as caught:
        plan(load(manifest))
    (issue,) = caught.value.issues
    assert issue.key == "tiers.training.template", issue
    assert "`ADD https://example.com/data.tar.gz /data/`" in issue.message
    assert "hermetic = false" in issue.message
    # the same template in a stack that is not hermetic plans (ADD is BuildKit's to fetch)
    manifest.write_text(manifest.read_text().replace("hermetic = true\n", ""))
    assert plan(load(manifest))


def test_an_index_that_cannot_say_where_a_wheel_is_keeps_its_password_and_is_not_other_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The builds' index URL may carry a password: an answer it cannot read names the page
    without it, and a lookup that fails is 'cannot fetch', not 'served other bytes'."""
    monkeypatch.setattr(simple, "get", lambda url, headers: (b"hello", "text/plain"))
    index = "https://ci:TOPSECRET@pypi.example/simple"
    with pytest.raises(IndexAnswerRefused) as refused:
        pywheels.served_at(index, "numpy", "numpy-2.3.5-cp311-cp311-linux_x86_64.whl")
    assert "TOPSECRET" not in str(refused.value) and "***@pypi.example" in str(refused.value)

    tier = next(iter(plan(load(quickstart_copy(tmp_path)))))

    def lookup() -> str:
        raise IndexAnswerRefused(str(refused.value))

    wheel = inputs.Locked(
        "numpy-2.3.5-cp311-cp311-linux_x86_64.whl", "0" * 64, None, "numpy 2.3.5", lookup
    )
    with pytest.raises(BuildFailed) as failed:
        inputs._download(tier, pywheels.KIND, wheel, tmp_path / "partial")
    said = str(failed.value)
    assert "cannot fetch numpy-2.3.5" in said and "other bytes" not in said
    assert "TOPSECRET" not in said


def test_a_link_in_the_tier_folder_is_replaced_never_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    body = b"the locked wheel's bytes"
    sha256 = hashlib.sha256(body).hexdigest()
    cached = inputs.machine_cache(pywheels.KIND) / f"sha256-{sha256}.whl"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(body)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"not ours to write")
    folder = tmp_path / "tier" / "pywheels"
    folder.mkdir(parents=True)
    name = "demo-1.0-py3-none-any.whl"
    (folder / name).symlink_to(outside)
    stack = load(quickstart_copy(tmp_path / "qs"))
    tier = next(iter(plan(stack)))
    wheel = inputs.Locked(name, sha256, len(body), "demo 1.0", lambda: "https://unused.example/")
    inputs.gather(stack, tier, pywheels.KIND, folder, [wheel])
    assert not (folder / name).is_symlink() and (folder / name).read_bytes() == body
    assert outside.read_bytes() == b"not ours to write"
