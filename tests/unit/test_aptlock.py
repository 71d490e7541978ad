"""apt locks: read at the door, what a template asks for, installed as locked, stale when
what they were resolved from moves; apt's own output parsed as a resolver gives it."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from build_graph.aptlock import files
from build_graph.aptlock.files import AptLock, Deb, Step, deb_from_file
from build_graph.docker.apt import parse
from build_graph.errors import BuildFailed, ConfigError
from build_graph.plan.plan import PlannedTier, plan
from build_graph.stages.apt_pin import disagreements, moves
from tests.helpers import MINIMAL, load_text

LOCKED = MINIMAL + "\n[apt]\nlock = true\n"
CHILD = (
    LOCKED
    + '\n[tiers.tools]\nparent = "base"\ntemplate = "python-packages.Dockerfile.j2"\n'
    + 'system_packages = ["curl"]\n'
)


def deb(name: str, version: str = "1.0-1", sha: str = "a" * 64) -> Deb:
    file = f"{name}_{version.replace(':', '%3a')}_amd64.deb"
    return Deb(name, version, "amd64", file, 1000, sha, f"http://deb.example/pool/{file}")


def lock(tier: PlannedTier, *debs: Deb) -> None:
    """Write the lock the tier's requests get, the first install adding `debs`."""
    assert tier.apt.path is not None
    steps = [Step(r, debs if i == 0 else ()) for i, r in enumerate(tier.apt.requests)]
    platform = tier.apt.inputs[0].removeprefix("platform ")
    files.write(tier.apt.path, AptLock(tier.group_key, platform, tier.apt.inputs, tuple(steps)))


def only(folder: Path, text: str, name: str = "base") -> PlannedTier:
    return next(t for t in plan(load_text(folder, text)) if t.spec.name == name)


def test_a_stack_that_does_not_lock_apt_installs_what_the_archive_serves(
    tmp_path: Path,
) -> None:
    (tmp_path / "images.aptlock").mkdir()
    (tmp_path / "images.aptlock" / "base.linux-amd64.toml").write_text("not a lock")
    tier = only(tmp_path, MINIMAL)
    assert tier.apt.path is None and tier.apt.fresh
    assert "apt-get install -y --no-install-recommends ca-certificates python3" in tier.dockerfile
    assert "aptlock" not in tier.dockerfile and "sha256sum" not in tier.dockerfile


def test_a_missing_lock_refuses_to_build_and_check_names_the_fix(tmp_path: Path) -> None:
    tier = only(tmp_path, LOCKED)
    assert not tier.apt.fresh
    assert tier.apt.requests == (
        ("ca-certificates", "python3", "python3-pip-whl", "python3-setuptools-whl"),
    )
    assert "images.aptlock/base.linux-amd64.toml is missing or stale" in tier.dockerfile
    assert "exit 1" in tier.dockerfile and "apt-get install" not in tier.dockerfile
    [issue] = disagreements(load_text(tmp_path, LOCKED), [tier])
    assert issue.file.name == "base.linux-amd64.toml"
    assert "run `python -m build_graph lock` to resolve it" in issue.message


def test_the_build_fetches_checks_and_installs_exactly_the_lock(tmp_path: Path) -> None:
    lock(only(tmp_path, LOCKED), deb("python3", "3.11.2-1+b1"), deb("libfoo", "1:2.0~rc1-1"))
    tier = only(tmp_path, LOCKED)
    assert tier.apt.fresh and tier.apt.pins == ["libfoo=1:2.0~rc1-1", "python3=3.11.2-1+b1"]
    text = tier.dockerfile
    assert "RUN --mount=type=bind,source=debs,target=/tmp/debs --network=none" in text
    check = text.index("sha256sum --check --strict --quiet /tmp/debs.sha256")
    install = text.index(
        "apt-get install -y --no-install-recommends "
        "'/tmp/debs/libfoo_1%3a2.0~rc1-1_amd64.deb' /tmp/debs/python3_3.11.2-1+b1_amd64.deb"
    )
    assert check < install and "apt-get update" not in text
    assert f"{'a' * 64} '/tmp/debs/libfoo_1%3a2.0~rc1-1_amd64.deb'" in text
    assert "# System packages locked in images.aptlock/base.linux-amd64.toml" in text


def test_other_bytes_under_the_same_version_make_another_tag(tmp_path: Path) -> None:
    lock(only(tmp_path, LOCKED), deb("python3"))
    first = only(tmp_path, LOCKED)
    lock(first, deb("python3", sha="b" * 64))
    second = only(tmp_path, LOCKED)
    assert first.apt.fresh and second.apt.fresh
    assert first.content_hash != second.content_hash


def test_a_package_added_makes_the_lock_stale(tmp_path: Path) -> None:
    lock(only(tmp_path, LOCKED), deb("python3"))
    text = LOCKED.replace(
        'template = "python-runtime.Dockerfile.j2"\n',
        'template = "python-runtime.Dockerfile.j2"\nsystem_packages = ["curl"]\n',
    )
    tier = only(tmp_path, text)
    assert not tier.apt.fresh and "is missing or stale" in tier.dockerfile


def test_a_tier_above_goes_stale_when_the_one_below_is_locked_again(tmp_path: Path) -> None:
    lock(only(tmp_path, CHILD), deb("python3"))
    lock(only(tmp_path, CHILD, "tools"), deb("curl"))
    assert only(tmp_path, CHILD, "tools").apt.fresh
    lock(only(tmp_path, CHILD), deb("python3", "3.11.2-2"))
    tools = only(tmp_path, CHILD, "tools")
    assert only(tmp_path, CHILD).apt.fresh and not tools.apt.fresh
    assert [d.name for d in tools.apt.below] == ["python3"]


def test_moving_the_from_pin_makes_the_lock_stale(tmp_path: Path) -> None:
    lock(only(tmp_path, LOCKED), deb("python3"))
    (tmp_path / "images.lock").write_text(f'[from]\n"debian:bookworm-slim" = "sha256:{"c" * 64}"\n')
    tier = only(tmp_path, LOCKED)
    assert not tier.apt.fresh and tier.apt.image.endswith("c" * 64)


@pytest.mark.parametrize(
    ("find", "put", "key"),
    [
        ('name = "python3"', 'name = "py;rm -rf /"', "steps[0].packages[0]"),
        (f'sha256 = "{"a" * 64}"', 'sha256 = "abc"', "steps[0].packages[0]"),
        ('url = "http://', 'url = "file:///etc/passwd#', "steps[0].packages[0]"),
        ('version = "1.0-1"', 'version = "1.0\'1"', "steps[0].packages[0]"),
        ("size = 1000", "size = -1", "steps[0].packages[0]"),
        ('format = "build-graph apt lock 1"', 'format = "2"', "format"),
        ('request = ["', 'request = ["$(id)", "', "steps[0].request"),
    ],
)
def test_a_damaged_lock_is_refused_naming_file_and_key(
    tmp_path: Path, find: str, put: str, key: str
) -> None:
    lock(only(tmp_path, LOCKED), deb("python3"))
    path = tmp_path / "images.aptlock" / "base.linux-amd64.toml"
    text = path.read_text()
    assert find in text
    path.write_text(text.replace(find, put, 1))
    with pytest.raises(ConfigError) as caught:
        only(tmp_path, LOCKED)
    [issue] = caught.value.issues
    assert issue.file == path and issue.key == key
    assert "delete the file and run `python -m build_graph lock`" in issue.message


def test_a_package_locked_twice_in_one_install_is_refused(tmp_path: Path) -> None:
    lock(only(tmp_path, LOCKED), deb("python3"), deb("python3", "2.0-1"))
    with pytest.raises(ConfigError, match="python3 is locked twice"):
        only(tmp_path, LOCKED)


def test_apt_file_names_carry_the_epoch_quoted() -> None:
    made = deb_from_file("g++_4%3a12.2.0-3_amd64.deb", 1, "f" * 64, "http://a/g++.deb")
    assert isinstance(made, Deb) and (made.name, made.version) == ("g++", "4:12.2.0-3")
    assert isinstance(deb_from_file("../../x_1_amd64.deb", 1, "f" * 64, "http://a/"), str)


POOL = "http://deb.debian.org/debian/pool/main"
MD5 = "MD5Sum:0123456789abcdef0123456789abcdef"
APT_SAID = f"""\
'{POOL}/g/gcc-defaults/g%2b%2b_12.2.0-3_amd64.deb' g++_4%3a12.2.0-3_amd64.deb 1356 {MD5}
'{POOL}/h/hello/hello_2.10-3_amd64.deb' hello_2.10-3_amd64.deb 52000 {MD5}
--- index records
Package: g++
Version: 4:12.2.0-3
Architecture: amd64
Size: 1356
SHA256: {{g}}
Description: the GNU C++ compiler
 SHA256: {{bad}}
\tSHA256: {{bad}}

Package: hello
Version: 2.10-3
Architecture: amd64
Size: 52000
SHA256: {{h}}
--- installed
ii libc6
rc oldpackage
--- end
"""
ASKED = ["g++", "hello", "libc6"]


def _said(**sums: str) -> str:
    return APT_SAID.format(**{"g": "1" * 64, "h": "2" * 64, "bad": "3" * 64, **sums})


def test_the_sha256_comes_from_the_index_record_of_each_file() -> None:
    rows = parse(_said(), "debian:bookworm-slim", ASKED)
    assert rows == [
        (
            "g++_4%3a12.2.0-3_amd64.deb",
            1356,
            "1" * 64,
            f"{POOL}/g/gcc-defaults/g%2b%2b_12.2.0-3_amd64.deb",
        ),
        ("hello_2.10-3_amd64.deb", 52000, "2" * 64, rows[1][3]),
    ]


def test_a_file_from_an_archive_without_md5_sums_is_locked_by_its_sha256() -> None:
    """Debian's security archive carries no MD5: --print-uris leaves the hash field empty
    (an upgrade of perl-base there was once dropped from a lock, and the build failed)."""
    said = _said().replace(f"hello_2.10-3_amd64.deb 52000 {MD5}", "hello_2.10-3_amd64.deb 52000 ")
    rows = parse(said, "debian:bookworm-slim", ASKED)
    assert [r[0] for r in rows] == ["g++_4%3a12.2.0-3_amd64.deb", "hello_2.10-3_amd64.deb"]
    assert rows[1][2] == "2" * 64


@pytest.mark.parametrize(
    "said",
    [
        _said(h="md5-only"),  # no SHA256 in the record
        _said().replace("Size: 52000", "Size: 52001"),  # another size than the file's
        _said().replace("Version: 2.10-3", "Version: 2.10-4"),  # no record of that version
        _said().replace("Architecture: amd64\nSize: 52000", "Architecture: i386\nSize: 52000"),
    ],
)
def test_a_file_the_index_does_not_vouch_for_is_refused(said: str) -> None:
    with pytest.raises(BuildFailed, match=r"hello_2\.10-3_amd64\.deb"):
        parse(said, "debian:bookworm-slim", ASKED)


@pytest.mark.parametrize(
    ("said", "asked", "words"),
    [
        (_said().replace("--- end\n", ""), ASKED, "cut short"),
        ("", ASKED, "cut short"),
        (_said().replace(f"'{POOL}/h/", f"{POOL}/h/"), ASKED, "a line of its plan"),
        (_said(), [*ASKED, "oldpackage"], "oldpackage would be neither installed"),
        (_said(), [*ASKED, "curl=7.88.1-10"], "curl=7.88.1-10 would be neither"),
    ],
)
def test_an_answer_that_would_leave_a_package_out_is_refused(
    said: str, asked: list[str], words: str
) -> None:
    """An answer cut short, a plan line that does not parse, or a requested package that
    would be neither installed nor already there: never read as 'nothing to install'."""
    with pytest.raises(BuildFailed, match=words):
        parse(said, "debian:bookworm-slim", asked)


def test_a_request_with_a_version_or_an_architecture_reads_back(tmp_path: Path) -> None:
    text = LOCKED.replace(
        'template = "python-runtime.Dockerfile.j2"\n',
        'template = "python-runtime.Dockerfile.j2"\nsystem_packages = ["gcc=4:12.2.0-3"]\n',
    )
    lock(only(tmp_path, text), deb("gcc", "4:12.2.0-3"))
    tier = only(tmp_path, text)
    assert tier.apt.fresh and "gcc=4:12.2.0-3" in tier.apt.requests[0]


@pytest.mark.parametrize(
    ("find", "put", "words"),
    [
        ("[[steps.packages]]", "packages = 5\n[[steps.x]]", "must be an array of tables"),
        ('version = "1.0-1"', 'version = "9.9"', "is not the .deb of python3=9.9"),
    ],
)
def test_a_lock_whose_shape_or_names_disagree_is_refused(
    tmp_path: Path, find: str, put: str, words: str
) -> None:
    lock(only(tmp_path, LOCKED), deb("python3"))
    path = tmp_path / "images.aptlock" / "base.linux-amd64.toml"
    path.write_text(path.read_text().replace(find, put, 1))
    with pytest.raises(ConfigError, match=re.escape(words)):
        only(tmp_path, LOCKED)


def test_check_names_a_template_that_installs_outside_the_lock(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "own.Dockerfile.j2").write_text(
        "FROM {{ base_image }}\nRUN apt-get update && apt-get -y install curl\n"
    )
    text = LOCKED + '\n[tiers.own]\nparent = "base"\ntemplate = "own.Dockerfile.j2"\n'
    lock(only(tmp_path, text), deb("python3"))
    stack = load_text(tmp_path, text)
    [issue] = disagreements(stack, plan(stack))
    assert issue.key == "tiers.own.template" and "apt-get -y install" in issue.message


def test_moves_say_what_changed() -> None:
    old = AptLock("base", "linux/amd64", (), (Step(("a",), (deb("a"), deb("b"))),))
    new = AptLock(
        "base", "linux/amd64", (), (Step(("a",), (deb("a", "1.0-2"), deb("b", sha="c" * 64))),)
    )
    assert moves("base.toml", None, new) == ["base.toml: recorded 2 apt packages"]
    assert moves("base.toml", old, new) == [
        "base.toml: a 1.0-1 -> 1.0-2",
        f"base.toml: b 1.0-1: other bytes ({'c' * 12})",
    ]
    assert moves("base.toml", old, old) == ["base.toml: no apt package moved"]


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://deb.debian.org/debian-security/pool/updates/main/o/openssl/x.deb", True),
        ("http://security.debian.org/debian-security/pool/updates/main/o/openssl/x.deb", True),
        ("http://security.ubuntu.com/ubuntu/pool/main/o/openssl/x.deb", True),
        ("http://deb.debian.org/debian/pool/main/o/openssl/x.deb", False),
        ("http://archive.ubuntu.com/ubuntu/pool/main/o/openssl/x.deb", False),
        ("http://mirror.example/security-notes/pool/x.deb", False),
    ],
)
def test_a_move_to_a_file_from_the_security_archive_says_so(url: str, said: bool) -> None:
    """Updates on purpose: the team reading `lock --update` sees which moves are security
    updates, by where the archive served the file (the lock keeps it), never by a guess."""
    old = AptLock("base", "linux/amd64", (), (Step(("ssl",), (deb("ssl", "3.0.1-1"),)),))
    moved = dataclasses.replace(deb("ssl", "3.0.1-1+deb12u1"), url=url)
    new = AptLock("base", "linux/amd64", (), (Step(("ssl",), (moved,)),))
    [line] = moves("base.toml", old, new)
    assert line == "base.toml: ssl 3.0.1-1 -> 3.0.1-1+deb12u1" + (" (security update)" * said)
