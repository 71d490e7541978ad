"""Snapshot archives (`[apt] snapshots`): where a locked .deb is asked for once its archive
dropped it, at the time its lock was resolved; the time read and written with the lock; a
snapshot's other bytes never passed on to the next source."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest

from build_graph.aptlock import files, snapshot
from build_graph.aptlock.files import AptLock, Step
from build_graph.errors import BuildFailed, ConfigError, IndexAnswerRefused, NotOnIndex
from build_graph.plan.plan import PlannedTier, plan
from build_graph.pypi import fetch
from build_graph.stages import apt_pin, debs, inputs
from tests.helpers import MINIMAL, config_errors, load_text
from tests.unit.test_aptlock import CHILD, LOCKED, deb, lock, only

DEBIAN = "http://deb.debian.org/debian"
SNAPSHOT = "https://snapshot.debian.org/archive/debian/{time}"
URL = f"{DEBIAN}/pool/main/h/hello/hello_2.10-3_amd64.deb"


def test_a_file_is_asked_of_the_snapshot_at_the_time_its_lock_was_resolved() -> None:
    stamp = "20261128T131200Z"
    said = snapshot.urls([(DEBIAN, SNAPSHOT)], stamp, URL)
    assert said == (
        f"https://snapshot.debian.org/archive/debian/{stamp}/pool/main/h/hello/"
        "hello_2.10-3_amd64.deb",
    )
    # the archive's URL written with a trailing slash, a snapshot without a time
    fixed = "http://mirror.example/debian-2026-11"
    assert snapshot.urls([(DEBIAN + "/", fixed)], "", URL) == (
        f"{fixed}/pool/main/h/hello/hello_2.10-3_amd64.deb",
    )


@pytest.mark.parametrize(
    ("url", "resolved"),
    [
        ("http://security.debian.org/debian-security/pool/x.deb", "20261128T131200Z"),
        ("http://deb.debian.org/debian-ports/pool/x.deb", "20261128T131200Z"),  # not below it
        (URL, ""),  # a lock written before it recorded a time
        (URL, "yesterday"),
    ],
)
def test_no_snapshot_url_for_another_archive_or_without_a_time(url: str, resolved: str) -> None:
    assert snapshot.urls([(DEBIAN, SNAPSHOT)], resolved, url) == ()


def test_the_time_is_the_snapshot_services_stamp() -> None:
    assert snapshot.is_stamp(snapshot.now())


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ('"deb.debian.org/debian" = "https://s.example/{time}"', "the archive's URL"),
        (f'"{DEBIAN}" = "snapshot.debian.org/{{time}}"', "is not an http(s) URL"),
        (f'"{DEBIAN}" = "https://s.example/{{time}}/{{time}}"', "more than once"),
        (f'"{DEBIAN}" = "https://s.example/{{time}}?token=x"', "query or fragment"),
        (f'"{DEBIAN}" = "https://s.example/{{time}}#x"', "query or fragment"),
        (f'"{DEBIAN}" = "http://alice:S3CRET@s.example/{{time}}"', "over plain http"),
        ('"http://bob:PW@deb.example/debian" = "https://s.example/{time}"', "credentials"),
        ('"http://deb.debian.org/debian x" = "https://s.example/{time}"', "not an http(s) URL"),
    ],
)
def test_a_snapshot_entry_that_cannot_serve_is_a_config_error(
    tmp_path: Path, entry: str, words: str
) -> None:
    [line] = config_errors(tmp_path, LOCKED + f"snapshots = {{ {entry} }}\n")
    assert line.startswith("apt.snapshots") and words in line, line
    assert "S3CRET" not in line and "PW@" not in line  # said redacted


def test_credentials_over_https_are_a_snapshot_url() -> None:
    assert snapshot.problem(DEBIAN, "https://alice:S3CRET@s.example/{time}") is None


@pytest.mark.parametrize("text", ["20261128T131200Z\n", "99999999T999999Z", "20261128T1312Z"])
def test_a_time_that_is_not_one_is_not_a_stamp(text: str) -> None:
    assert not snapshot.is_stamp(text)
    assert snapshot.urls([(DEBIAN, SNAPSHOT)], text, URL) == ()


def test_snapshots_change_no_tag(tmp_path: Path) -> None:
    for folder in ("plain", "snapped", "bare"):
        (tmp_path / folder).mkdir()
    plain = only(tmp_path / "plain", LOCKED)
    lock(plain, deb("curl"))
    text = LOCKED + f'snapshots = {{ "{DEBIAN}" = "{SNAPSHOT}" }}\n'
    snapped = only(tmp_path / "snapped", text)
    lock(snapped, deb("curl"))
    again = only(tmp_path / "plain", LOCKED), only(tmp_path / "snapped", text)
    assert again[0].content_hash == again[1].content_hash
    assert load_text(tmp_path / "snapped", text).apt_snapshots == ((DEBIAN, SNAPSHOT),)
    assert load_text(tmp_path / "bare", MINIMAL).apt_snapshots == ()


def test_the_resolved_time_reads_back_and_a_lock_without_one_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "images.aptlock" / "base.linux-amd64.toml"
    manifest = tmp_path / "images.toml"
    made = AptLock(
        "base",
        "linux/amd64",
        ("platform linux/amd64",),
        (Step(("curl",), (deb("curl"),)),),
        "20261128T131200Z",
    )
    files.write(path, made)
    assert files.read(path, "base", manifest) == made
    files.write(path, AptLock(made.key, made.platform, made.inputs, made.steps))
    assert "\nresolved = " not in path.read_text()
    again = files.read(path, "base", manifest)
    assert again is not None and again.resolved == ""
    path.write_text(path.read_text().replace("platform = ", 'resolved = "last week"\nplatform = '))
    with pytest.raises(ConfigError) as refused:
        files.read(path, "base", manifest)
    [issue] = refused.value.issues
    assert issue.key == "resolved" and "20261128T131200Z" in issue.message


def test_the_tiers_debs_carry_their_snapshot_urls(tmp_path: Path) -> None:
    text = LOCKED + f'snapshots = {{ "{DEBIAN}" = "{SNAPSHOT}" }}\n'
    tier = only(tmp_path, text)
    assert tier.apt.path is not None
    curl = dataclasses.replace(deb("curl"), url=f"{DEBIAN}/pool/main/c/curl/curl_1.0-1_amd64.deb")
    steps = tuple(Step(r, (curl,) if i == 0 else ()) for i, r in enumerate(tier.apt.requests))
    made = AptLock(tier.group_key, "linux/amd64", tier.apt.inputs, steps, "20261128T131200Z")
    files.write(tier.apt.path, made)
    stack = load_text(tmp_path, text)
    [fresh] = [t for t in plan(stack) if t.spec.name == "base"]
    [locked] = debs.debs(stack, fresh)
    assert locked.origin() == curl.url
    assert locked.elsewhere == (
        "https://snapshot.debian.org/archive/debian/20261128T131200Z/pool/main/c/curl/" + curl.file,
    )


def test_the_snapshot_is_asked_only_when_the_archive_has_the_file_no_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = b"the locked .deb"
    asked: list[str] = []

    def stream(url: str, out: object, limit: int | None = None, timeout: float = 0) -> str:
        asked.append(url)
        if "archive" in url:
            raise NotOnIndex(f"{url}: 404")
        return hashlib.sha256(body).hexdigest()

    monkeypatch.setattr(fetch, "stream", stream)
    tier = only(tmp_path, LOCKED)
    file = inputs.Locked(
        "x.deb",
        "0" * 64,
        len(body),
        "x 1.0",
        lambda: "http://archive/x.deb",
        ("http://snap-one/x.deb", "http://snap-two/x.deb"),
    )
    url, got = inputs._download(tier, debs.KIND, file, tmp_path / "partial")
    assert (url, got) == ("http://snap-one/x.deb", hashlib.sha256(body).hexdigest())
    assert asked == ["http://archive/x.deb", "http://snap-one/x.deb"]

    # nowhere: one error naming what each said
    def gone(url: str, out: object, limit: int | None = None, timeout: float = 0) -> str:
        raise NotOnIndex(f"{url}: 404")

    monkeypatch.setattr(fetch, "stream", gone)
    with pytest.raises(BuildFailed) as failed:
        inputs._download(tier, debs.KIND, file, tmp_path / "partial")
    said = str(failed.value)
    assert "cannot fetch x.deb (x 1.0)" in said
    urls = ("http://archive/x.deb", "http://snap-one/x.deb", "http://snap-two/x.deb")
    assert all(f"{u}: 404" in said for u in urls)


def test_other_bytes_from_the_archive_are_refused_not_sent_on_to_a_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    def stream(url: str, out: object, limit: int | None = None, timeout: float = 0) -> str:
        asked.append(url)
        raise IndexAnswerRefused(f"{url}: more than {limit} bytes; refused")

    monkeypatch.setattr(fetch, "stream", stream)
    tier = only(tmp_path, LOCKED)
    file = inputs.Locked(
        "x.deb", "0" * 64, 10, "x 1.0", lambda: "http://archive/x.deb", ("http://snap/x.deb",)
    )
    with pytest.raises(BuildFailed) as failed:
        inputs._download(tier, debs.KIND, file, tmp_path / "partial")
    assert "http://archive/x.deb served other bytes for x 1.0" in str(failed.value)
    assert asked == ["http://archive/x.deb"]


def test_outdated_says_every_tier_it_could_ask_when_one_cannot_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pin below gone from the archive: that tier's line says so, the others' moves
    are still listed (apt itself stood in)."""
    text = CHILD
    lock(only(tmp_path, text, "base"), deb("ca-certificates"))
    lock(only(tmp_path, text, "tools"), deb("curl"))  # on base's pins, as locked
    stack = load_text(tmp_path, text)
    newer = {"base": deb("ca-certificates", "2.0-1")}

    def resolve(tier: PlannedTier, keep: bool = True) -> AptLock:
        if tier.spec.name != "base":
            raise BuildFailed(f"{tier.key}: apt could not resolve ca-certificates=1.0-1: gone")
        assert tier.apt.lock is not None and not keep
        steps = tuple(Step(s.request, (newer["base"],)) for s in tier.apt.lock.steps)
        return dataclasses.replace(tier.apt.lock, steps=steps)

    monkeypatch.setattr(apt_pin, "resolve", resolve)
    asked, lines = apt_pin.newer(stack)
    assert asked == 2
    assert "base.linux-amd64.toml: ca-certificates 1.0-1 -> 2.0-1" in lines
    assert any(
        line.startswith("tools.linux-amd64.toml: could not be asked: tools: apt could not")
        for line in lines
    ), lines


def test_check_notes_a_snapshot_key_no_locked_file_starts_with(tmp_path: Path) -> None:
    debian_https = "https://deb.debian.org/debian"
    text = LOCKED + (
        f'snapshots = {{ "{DEBIAN}" = "{SNAPSHOT}", "{debian_https}" = "{SNAPSHOT}" }}\n'
    )
    tier = only(tmp_path, text)
    curl = dataclasses.replace(deb("curl"), url=f"{DEBIAN}/pool/main/c/curl/curl_1.0-1_amd64.deb")
    lock(tier, curl)
    stack = load_text(tmp_path, text)
    [note] = apt_pin.unused_snapshots(stack, plan(stack))
    assert note.startswith(f"[apt] snapshots: '{debian_https}' matches no file")
    assert note.endswith(f"their archives: {DEBIAN}"), note


def test_one_named_package_that_needs_others_to_move_is_refused_not_all_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """curl 2 needs libcurl4 2; the lock holds libcurl4 1 and vim 1: moving curl alone is
    refused naming the fix, where it used to move the whole install (apt stood in)."""
    tier = only(tmp_path, LOCKED)
    lock(tier, deb("curl", "1"), deb("libcurl4", "1"), deb("vim", "1"))
    tier = only(tmp_path, LOCKED)
    newest = [deb("curl", "2"), deb("libcurl4", "2"), deb("vim", "2")]

    def ask(t: PlannedTier, platform: str, have: list[object], request: list[str]) -> list[object]:
        if "libcurl4=1" in request:
            raise BuildFailed("apt: curl : Depends: libcurl4 (= 2) but 1 is to be installed")
        return list(newest)

    monkeypatch.setattr(apt_pin, "_ask", ask)
    with pytest.raises(BuildFailed) as refused:
        apt_pin.resolve(tier, keep=True, move=frozenset({"curl"}))
    said = str(refused.value)
    assert "moving curl alone does not install with the rest of the lock" in said
    assert "lock --update base" in said
    # without a name, a pin that no longer fits goes to the newest, as before
    assert [d.pin for d in apt_pin.resolve(tier, keep=True).debs] == [d.pin for d in newest]
