"""prune's retention rules, from plain data: what is deleted, what stays and why."""

from __future__ import annotations

import dataclasses
import datetime

import pytest

from build_graph.errors import EXIT_CONFIG
from build_graph.oci.digest import Digest
from build_graph.oci.retention import (
    Image,
    Policy,
    Repository,
    bytes_freed,
    decide,
    tag_kind,
)
from build_graph.plan.hashing import TAG_LENGTH

NOW = datetime.datetime(2026, 11, 23, 12, tzinfo=datetime.UTC)
OLD = Policy(stack="s", keep=1, older_than=datetime.timedelta(days=14), now=NOW)


def dig(n: int) -> Digest:
    return Digest(f"{n:064x}")


def htag(n: int) -> str:
    return f"{n:0{TAG_LENGTH}x}"


def build(
    n: int, days_ago: float, layers: tuple[int, ...] = (), platform: str | None = "linux/amd64"
) -> Image:
    return Image(
        dig(n),
        NOW - datetime.timedelta(days=days_ago),
        tuple((dig(1000 + layer), 100 * layer) for layer in layers),
        stack="s",
        platform=platform,
    )


def repo(**tags: Image) -> Repository:
    return Repository("r/runner", {t.removeprefix("t_"): i for t, i in tags.items()})


def verdicts(r: Repository, planned: set[str], policy: Policy = OLD) -> dict[str, str]:
    return {d.tags[0]: ("delete" if d.delete else d.why) for d in decide(r, planned, policy)}


def test_the_hash_tag_shape_is_the_plans() -> None:
    assert tag_kind(htag(7)) == "hash" and tag_kind("latest") == "human"
    assert tag_kind(f"{dig(3).dashed}.verify-abc") == "artifact"
    assert tag_kind(htag(7) + "0") == "human"  # one digit longer: a person's tag


def test_old_unplanned_untagged_builds_go_with_their_artifacts() -> None:
    r = Repository(
        "r/runner",
        {
            htag(1): build(1, 40, (1, 2)),
            htag(2): build(2, 30, (1, 3)),
            htag(3): build(3, 1, (1, 4)),
            "latest": Image(dig(3)),
            f"{dig(1).dashed}.verify-fp": Image(dig(901)),
            f"{dig(1).dashed}.sbom-fp": Image(dig(902)),
        },
    )
    decisions = {d.digest: d for d in decide(r, {htag(3)}, OLD)}
    assert {d for d in decisions if decisions[d].delete} == {dig(1), dig(2)}
    assert decisions[dig(1)].artifacts == (
        (f"{dig(1).dashed}.sbom-fp", dig(902)),
        (f"{dig(1).dashed}.verify-fp", dig(901)),
    )
    assert "older than 14d" in decisions[dig(1)].why
    # layer 1 is shared with the kept build: only layers 2 and 3 are freed
    assert bytes_freed(decisions.values(), [r]) == 200 + 300


def test_human_tags_the_plan_the_newest_and_the_young_keep_their_images() -> None:
    r = repo(
        **{
            htag(1): build(1, 50),
            htag(2): build(2, 40),
            "release": Image(dig(2)),
            htag(3): build(3, 30),
            htag(4): build(4, 20),
            htag(5): build(5, 2),
            htag(6): build(6, 1),
        }
    )
    found = verdicts(r, planned={htag(3)}, policy=Policy("s", 2, datetime.timedelta(days=14), NOW))
    assert found[htag(1)] == "delete" and found[htag(4)] == "delete"
    assert found[htag(2)] == "kept: the human tag 'release' names it"
    assert found[htag(3)] == f"kept: the current plan builds it ({htag(3)})"
    assert found[htag(6)] == found[htag(5)] == "kept: one of the newest 2 builds for linux/amd64"
    young = verdicts(r, set(), Policy("s", 0, datetime.timedelta(days=25), NOW))
    assert young[htag(4)].startswith("kept: younger than 25d")


def test_an_image_whose_state_cannot_be_read_stays() -> None:
    broken = Image(dig(1), None, problem="its config blob sha256:... is gone")
    found = verdicts(
        repo(**{htag(1): broken, htag(2): build(2, 30), htag(3): build(3, 1)}), {htag(3)}
    )
    assert (
        found[htag(1)] == "kept: its state could not be read (its config blob sha256:... is gone)"
    )
    assert found[htag(2)] == "delete"


def test_an_unreadable_human_tag_keeps_the_whole_repository() -> None:
    r = repo(**{htag(1): build(1, 50), "release": Image(None, problem="gone meanwhile")})
    found = verdicts(r, set(), Policy("s", 0, datetime.timedelta(0), NOW))
    assert found[htag(1)] == "kept: the tag 'release' could not be read, it may name this image"


def test_a_digest_named_by_a_planned_and_an_old_hash_tag_stays() -> None:
    # Deleting by digest would take the planned tag with it.
    r = repo(**{htag(1): build(1, 50), htag(2): build(1, 50), htag(3): build(3, 0)})
    [d, _] = sorted(
        decide(r, {htag(2)}, Policy("s", 0, datetime.timedelta(0), NOW)), key=lambda d: d.digest
    )
    assert not d.delete and d.tags == (htag(1), htag(2))


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--older-than", "2w"], "--older-than '2w': expected a number and a unit"),
        (["--older-than", "2 weeks"], "e.g. 14d, 12h, 30m or 0s"),
        (["--keep", "-1"], "--keep -1: expected 0 or more builds"),
    ],
)
def test_prune_refuses_bad_limits_before_reading_anything(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from build_graph.cli.main import main

    # the manifest does not exist: the limits are refused before it is read
    assert main(["prune", *args, "--manifest", "no-such/images.toml"]) == EXIT_CONFIG
    assert says in capsys.readouterr().err


def test_another_stacks_or_an_unlabelled_build_in_a_shared_repository_is_never_judged() -> None:
    """Two stacks with a `runner` tier on one registry share r/runner: only this stack's
    plan is known here, so the other's builds (and unlabelled images) stay."""
    other = Image(dig(2), NOW - datetime.timedelta(days=90), stack="other")
    unlabelled = Image(dig(3), NOW - datetime.timedelta(days=90))
    r = repo(
        **{
            f"t_{htag(1)}": build(1, 1),
            f"t_{htag(2)}": other,
            f"t_{htag(3)}": unlabelled,
            f"t_{htag(4)}": build(4, 60),
        }
    )
    found = verdicts(r, set(), Policy("s", 0, datetime.timedelta(days=14), NOW))
    assert found[htag(2)] == "kept: built by the stack 'other', not this one"
    assert found[htag(3)] == "kept: no build-graph stack label: not a build of this stack"
    assert found[htag(4)] == "delete"


def test_an_unreadable_build_does_not_take_a_keep_place_from_a_readable_one() -> None:
    r = repo(**{f"t_{htag(1)}": build(1, 30), f"t_{htag(2)}": Image(dig(2), problem="gone")})
    found = verdicts(r, set(), Policy("s", 1, datetime.timedelta(days=14), NOW))
    assert found[htag(1)] == "kept: one of the newest 1 builds for linux/amd64"
    assert found[htag(2)].startswith("kept: its state could not be read")


def test_the_next_page_is_found_wherever_the_link_header_lists_it() -> None:
    from build_graph.oci.refs import parse_ref
    from build_graph.registry.tags import _next_page

    ref = parse_ref("127.0.0.1:5000/team/app")
    both = (
        '</v2/team/app/tags/list?n=2&last=a>; rel="prev", '
        '</v2/team/app/tags/list?n=2&last=d>; rel="next"'
    )
    assert _next_page(ref, both) == "tags/list?n=2&last=d"
    assert _next_page(ref, "") is None


def test_the_platform_images_an_index_under_a_human_tag_refers_to_stay() -> None:
    # 'release' names an index of two platform images; no hash tag of theirs is planned
    r = repo(
        **{
            htag(1): build(1, 50),
            htag(2): build(2, 50),
            htag(3): build(3, 50),
            "release": Image(dig(77), refers_to=(dig(1), dig(2))),
        }
    )
    found = verdicts(r, set(), Policy("s", 0, datetime.timedelta(0), NOW))
    assert (
        found[htag(1)] == found[htag(2)] == "kept: the index under the human tag "
        "'release' refers to it"
    )
    assert found[htag(3)] == "delete"
    unknown = repo(**{htag(1): build(1, 50), "release": Image(dig(77), problem="not JSON")})
    assert (
        verdicts(unknown, set(), Policy("s", 0, datetime.timedelta(0), NOW))[htag(1)]
        == "kept: the tag 'release' could not be read, it may name this image"
    )


def test_keep_ranks_the_builds_of_each_platform_separately() -> None:
    """Four releases of a tier built for two platforms, each release's arm64 image made a
    few hours before its amd64 one: --keep 3 keeps three releases whole (both images), and
    deletes both images of the oldest; ranked together, release 2 would lose its arm64
    image and keep its amd64 one."""
    tags: dict[str, Image] = {}
    for release in range(4):  # oldest first
        days = 40 - 5 * release
        tags[htag(10 * release)] = build(10 * release, days, platform="linux/amd64")
        tags[htag(10 * release + 1)] = build(10 * release + 1, days + 0.2, platform="linux/arm64")
    found = verdicts(
        Repository("r/runner", tags), set(), Policy("s", 3, datetime.timedelta(days=14), NOW)
    )
    for release in (1, 2, 3):
        assert found[htag(10 * release)] == "kept: one of the newest 3 builds for linux/amd64"
        assert found[htag(10 * release + 1)] == "kept: one of the newest 3 builds for linux/arm64"
    assert found[htag(0)] == found[htag(1)] == "delete"


def test_a_platform_with_fewer_builds_keeps_them_all() -> None:
    # amd64 rebuilt three times since the only arm64 build: --keep 1 keeps one of each
    r = repo(
        **{
            htag(1): build(1, 50, platform="linux/arm64"),
            htag(2): build(2, 40),
            htag(3): build(3, 30),
            htag(4): build(4, 20),
        }
    )
    found = verdicts(r, set(), Policy("s", 1, datetime.timedelta(days=14), NOW))
    assert found[htag(1)] == "kept: one of the newest 1 builds for linux/arm64"
    assert found[htag(4)] == "kept: one of the newest 1 builds for linux/amd64"
    assert found[htag(2)] == found[htag(3)] == "delete"


def test_builds_of_an_unknown_platform_are_ranked_among_themselves() -> None:
    """An image whose config names no platform neither takes a keep place from a build of
    a known platform nor loses one to the (newer) builds of a known platform."""
    r = repo(
        **{
            htag(1): build(1, 60, platform=None),
            htag(2): build(2, 55, platform=None),
            htag(3): build(3, 40),
            htag(4): build(4, 20),
        }
    )
    found = verdicts(r, set(), Policy("s", 1, datetime.timedelta(days=14), NOW))
    assert found[htag(2)] == "kept: one of the newest 1 builds whose platform is unknown"
    assert found[htag(4)] == "kept: one of the newest 1 builds for linux/amd64"
    assert found[htag(1)] == found[htag(3)] == "delete"


def test_the_platform_is_the_configs_os_and_architecture() -> None:
    from build_graph.oci.platforms import stated_platform as config_platform

    assert (
        config_platform({"os": "linux", "architecture": "arm64", "variant": "v8"}) == "linux/arm64"
    )
    assert config_platform({"os": "linux", "architecture": "amd64"}) == "linux/amd64"
    for unknown in (
        {"os": "linux"},
        {"os": "linux", "architecture": 7},
        {"os": "", "architecture": "amd64"},
        {"os": "a/b", "architecture": "x"},
        ["linux", "amd64"],
    ):
        assert config_platform(unknown) is None


DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"


def index_body(*digests: Digest, media_type: str = DOCKER_MANIFEST) -> dict[str, object]:
    """An index's JSON as a registry may serve it: here labelled (in its body, as its
    Content-Type may be) as an image manifest."""
    return {
        "schemaVersion": 2,
        "mediaType": media_type,
        "manifests": [
            {
                "mediaType": DOCKER_MANIFEST,
                "digest": str(d),
                "size": 500,
                "platform": {"os": "linux", "architecture": a},
            }
            for d, a in zip(digests, ("amd64", "arm64"), strict=True)
        ],
    }


def test_a_human_tag_naming_an_index_labelled_as_an_image_keeps_its_platform_images() -> None:
    """The index is recognized by its body (a `manifests` list), not by its media type: a
    registry or proxy that mislabels `latest` must not let prune delete what it refers to."""
    from build_graph.registry.catalog import human_tag_image

    latest = human_tag_image(dig(77), index_body(dig(1), dig(2)))
    assert latest == Image(dig(77), refers_to=(dig(1), dig(2)))
    r = repo(
        **{
            htag(1): build(1, 50),
            htag(2): build(2, 50, platform="linux/arm64"),
            htag(3): build(3, 50),
            "latest": latest,
        }
    )
    found = verdicts(r, set(), Policy("s", 0, datetime.timedelta(0), NOW))
    assert (
        found[htag(1)] == found[htag(2)] == "kept: the index under the human tag "
        "'latest' refers to it"
    )
    assert found[htag(3)] == "delete"


def test_a_human_tag_naming_an_image_manifest_refers_to_nothing_else() -> None:
    from build_graph.registry.catalog import human_tag_image

    image = {
        "schemaVersion": 2,
        "mediaType": DOCKER_MANIFEST,
        "config": {"digest": str(dig(5)), "size": 10},
        "layers": [{"digest": str(dig(6)), "size": 20}],
    }
    assert human_tag_image(dig(1), image) == Image(dig(1))


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"schemaVersion": 2, "manifests": "sha256:..."}, "an index whose entries could not be"),
        ({"schemaVersion": 2, "manifests": [{"digest": "md5:abc"}]}, "an index whose entries"),
        ({"schemaVersion": 2, "manifests": [{"size": 3}]}, "an index whose entries"),
        ({"schemaVersion": 2, "manifests": ["sha256:..."]}, "an index whose entries"),
        ({"schemaVersion": 2, "config": {"digest": str(dig(5))}}, "neither an image index nor"),
        ({"schemaVersion": 2, "layers": []}, "neither an image index nor an image manifest"),
        ([1, 2], "neither an image index nor an image manifest"),
        ("latest", "neither an image index nor an image manifest"),
    ],
)
def test_a_human_tag_whose_manifest_is_neither_keeps_the_whole_repository(
    body: object, says: str
) -> None:
    from build_graph.registry.catalog import human_tag_image

    latest = human_tag_image(dig(77), body)
    assert latest.problem is not None and says in latest.problem
    r = repo(**{htag(1): build(1, 50), "latest": latest})
    assert (
        verdicts(r, set(), Policy("s", 0, datetime.timedelta(0), NOW))[htag(1)]
        == "kept: the tag 'latest' could not be read, it may name this image"
    )


def test_a_deleted_builds_index_takes_its_inner_manifests_but_none_a_kept_one_holds() -> None:
    """The containerd store pushes each build as an index (the platform image, its
    attestation): deleting the index leaves those manifests, and their layers, to a garbage
    collection that keeps every manifest; so they go too, except one a staying build holds
    (identical builds share their platform manifest)."""
    import dataclasses

    old = dataclasses.replace(build(1, 50), contains=(dig(11), dig(12)))
    twin = dataclasses.replace(build(2, 40), contains=(dig(11), dig(22)))  # same image
    current = dataclasses.replace(build(3, 1), contains=(dig(31), dig(32)))
    r = repo(**{htag(1): old, htag(2): twin, htag(3): current})
    policy = Policy("s", 1, datetime.timedelta(days=14), NOW)
    by_tag = {d.tags[0]: d for d in decide(r, set(), policy)}
    assert by_tag[htag(1)].delete and by_tag[htag(2)].delete and not by_tag[htag(3)].delete
    assert set(by_tag[htag(1)].inner) == {dig(11), dig(12)}
    assert by_tag[htag(3)].inner == ()
    kept_twin = repo(**{htag(1): old, htag(2): twin, htag(3): current, "release": Image(dig(2))})
    by_tag = {d.tags[0]: d for d in decide(kept_twin, set(), policy)}
    assert by_tag[htag(1)].delete and not by_tag[htag(2)].delete
    assert by_tag[htag(1)].inner == (dig(12),)  # dig(11) is the kept twin's image too


def test_an_index_under_a_human_tag_keeps_the_build_whose_image_it_refers_to() -> None:
    """A per-platform tier's `latest` refers to the platform images inside each build's
    index, not to the index the hash tag names."""
    import dataclasses

    inside = dataclasses.replace(build(1, 50), contains=(dig(11), dig(12)))
    r = repo(
        **{
            htag(1): inside,
            htag(2): build(2, 1),
            "latest": Image(dig(77), refers_to=(dig(11), dig(99))),
        }
    )
    found = verdicts(r, set(), Policy("s", 0, datetime.timedelta(0), NOW))
    assert found[htag(1)] == "kept: the index under the human tag 'latest' refers to it"
    assert found[htag(2)] == "delete"


FIXED = datetime.datetime(1980, 1, 1, tzinfo=datetime.UTC)  # stages/build.SOURCE_DATE_EPOCH


def reproducible(n: int) -> Image:
    return Image(dig(n), FIXED, stack="s", platform="linux/amd64")


def stored(n: int, days_ago: float) -> Image:
    """An artifact (report, SBOM) stored `days_ago`: its tag names the image it is about."""
    return Image(dig(n), NOW - datetime.timedelta(days=days_ago))


def test_a_reproducible_build_is_aged_by_its_records_not_its_fixed_created() -> None:
    policy = Policy("s", 0, datetime.timedelta(days=14), NOW, fixed_created=FIXED)
    r = repo(
        **{
            htag(1): reproducible(1),  # pushed and verified an hour ago
            f"{dig(1).dashed}.verify-fp": stored(901, 1 / 24),
            f"{dig(1).dashed}.sbom": stored(902, 1 / 24),
            htag(2): reproducible(2),  # verified 30 days ago, verified again 20 days ago
            f"{dig(2).dashed}.verify-a": stored(903, 30),
            f"{dig(2).dashed}.verify-b": stored(904, 20),
            htag(3): reproducible(3),  # nothing dates it
            htag(4): build(4, 2),  # built before images were reproducible: its own created
        }
    )
    found = verdicts(r, set(), policy)
    assert found[htag(1)].startswith("kept: younger than 14d (built ")
    assert found[htag(2)] == "delete"
    assert found[htag(3)].startswith("kept: nothing says when it was built")
    assert found[htag(4)].startswith("kept: younger than 14d")
    # without the fixed time known, 1980 reads as old: the very bug the records guard against
    unaware = verdicts(
        repo(**{htag(3): reproducible(3)}), set(), dataclasses.replace(policy, fixed_created=None)
    )
    assert unaware[htag(3)] == "delete"


def test_builds_are_ranked_by_their_records_too() -> None:
    policy = Policy("s", 1, datetime.timedelta(days=0), NOW, fixed_created=FIXED)
    r = repo(
        **{
            htag(1): reproducible(1),
            f"{dig(1).dashed}.verify-fp": stored(901, 3),
            htag(2): reproducible(2),
            f"{dig(2).dashed}.verify-fp": stored(902, 1),
        }
    )
    found = verdicts(r, set(), policy)
    assert found[htag(2)] == "kept: one of the newest 1 builds for linux/amd64"
    assert found[htag(1)] == "delete"


@pytest.mark.parametrize(
    ("text", "seconds"), [("14d", 14 * 86400.0), ("12h", 43200.0), ("90s", 90.0), (" 0s ", 0.0)]
)
def test_durations_as_written(text: str, seconds: float) -> None:
    from build_graph.manifest.values import parse_duration

    assert parse_duration(text) == seconds
    assert parse_duration(text.strip() + "s") is None  # '14ds': one unit only
