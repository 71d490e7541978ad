"""Multi-platform tiers, pure parts: platform names, which tier builds for what, the plan's
keys and hashes, and the index a human tag names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from build_graph.ccache.keys import cache_key, key_fields
from build_graph.manifest.load import load
from build_graph.oci.digest import Digest
from build_graph.oci.index import (
    DOCKER_LIST,
    DOCKER_MANIFEST,
    OCI_INDEX,
    OCI_MANIFEST,
    Entry,
    build_index,
)
from build_graph.oci.platforms import Platform, parse_platform
from build_graph.plan.plan import groups, plan
from tests.helpers import (
    MINIMAL,
    REPO,
    config_errors,
    doit,
    load_text,
    one_error,
    write_manifest,
)

TWO = '["linux/amd64", "linux/arm64"]'
STACK = (
    MINIMAL.replace(
        'registry = "127.0.0.1:5000/demo"', f'registry = "127.0.0.1:5000/demo"\nplatforms = {TWO}'
    )
    + """
[tiers.app]
parent = "base"
template = "training.Dockerfile.j2"
"""
)


def test_platform_names_are_dockers_and_normalized() -> None:
    assert parse_platform("linux/arm64") == Platform("linux", "arm64")
    assert parse_platform("linux/arm64/v8").text == "linux/arm64"
    assert parse_platform("linux/amd64").machine == "x86_64"
    assert parse_platform("linux/arm64").machine == "aarch64"
    with pytest.raises(ValueError, match="write 'linux/amd64'"):
        parse_platform("linux/x86_64")
    with pytest.raises(ValueError, match="supported: linux/amd64, linux/arm64"):
        parse_platform("windows/amd64")


def test_a_platform_name_docker_does_not_take_names_the_key_and_the_fix(tmp_path: Path) -> None:
    errors = config_errors(tmp_path, STACK.replace(TWO, '["linux/amd64", "linux/aarch64"]'))
    assert any("stack.platforms" in e and "write 'linux/arm64'" in e for e in errors), errors


def test_each_tier_gets_one_image_per_platform_keyed_and_hashed_by_it(tmp_path: Path) -> None:
    planned = plan(load_text(tmp_path, STACK))
    assert [p.key for p in planned] == ["base/amd64", "base/arm64", "app/amd64", "app/arm64"]
    assert {p.group_key for p in planned} == {"base", "app"}
    by_key = {p.key: p for p in planned}
    assert by_key["base/amd64"].content_hash != by_key["base/arm64"].content_hash
    # each platform's child is built on the same platform's parent
    assert by_key["app/arm64"].base_image == by_key["base/arm64"].image
    assert by_key["app/amd64"].base_image == by_key["base/amd64"].image
    assert by_key["base/arm64"].folder.root.parts[-3:] == ("default", "base", "linux-arm64")
    assert by_key["base/arm64"].expect.machine == "aarch64"
    assert list(groups(planned)) == ["base", "app"]


def test_a_stack_without_platforms_keeps_its_keys_and_hashes(tmp_path: Path) -> None:
    host_only = plan(load_text(tmp_path, STACK.replace(f"platforms = {TWO}\n", "")))
    assert [p.key for p in host_only] == ["base", "app"]
    assert all(p.platform is None and p.expect.platform is None for p in host_only)
    # the hash is what it was before platforms existed: no 'platform' input at all
    assert all(name != "platform" for p in host_only for name, _ in p.inputs)
    amd64 = plan(load_text(tmp_path, STACK.replace(TWO, '["linux/amd64"]')))
    assert amd64[0].content_hash != host_only[0].content_hash  # declared: an input


def test_a_tier_may_narrow_its_parents_platforms_but_not_widen_them(tmp_path: Path) -> None:
    narrowed = STACK + 'platforms = ["linux/arm64"]\n'
    assert [p.key for p in plan(load_text(tmp_path, narrowed))] == [
        "base/amd64",
        "base/arm64",
        "app/arm64",
    ]
    host_parent = (
        MINIMAL + f'\n[tiers.app]\nparent = "base"\ntemplate = '
        f'"training.Dockerfile.j2"\nplatforms = {TWO}\n'
    )
    message = one_error(tmp_path, host_parent, "tiers.app.platforms")
    assert "parent 'base' is built for the build host's platform only" in message


def test_a_compile_needs_a_builder_of_each_platform(tmp_path: Path) -> None:
    text = (
        MINIMAL
        + f"""
[tiers.builder]
from = "debian:bookworm-slim"
template = "builder.Dockerfile.j2"
platforms = ["linux/amd64"]

[tiers.ext]
from = "debian:bookworm-slim"
template = "python-runtime.Dockerfile.j2"
platforms = {TWO}
compile = {{ builder = "builder", script = "pytorch-compile.sh.j2" }}
"""
    )
    message = one_error(tmp_path, text, "tiers.ext.platforms")
    assert "compile.builder 'builder' for linux/amd64" in message
    assert "give the builder these platforms" in message


def test_an_empty_or_repeated_list_is_refused(tmp_path: Path) -> None:
    assert "list at least one" in one_error(
        tmp_path, STACK + "platforms = []\n", "tiers.app.platforms"
    )
    assert "listed twice" in one_error(
        tmp_path, STACK.replace(TWO, '["linux/arm64", "linux/arm64/v8"]'), "stack.platforms"
    )
    assert "list at least one" in one_error(tmp_path, STACK.replace(TWO, "[]"), "stack.platforms")
    variant = STACK + "\n[variants.a]\nplatforms = []\n"
    assert "list at least one" in one_error(tmp_path, variant, "variants.a.platforms")


def _entry(arch: str, media_type: str = DOCKER_MANIFEST) -> Entry:
    return Entry(Platform("linux", arch), Digest.of(arch.encode()), 500 + len(arch), media_type)


def test_the_index_is_the_same_bytes_for_the_same_images() -> None:
    first = build_index([_entry("amd64"), _entry("arm64")])
    again = build_index([_entry("amd64"), _entry("arm64")])
    assert first == again and first.digest == Digest.of(first.body)
    document = json.loads(first.body)
    assert document["mediaType"] == first.media_type == DOCKER_LIST
    assert [m["platform"] for m in document["manifests"]] == [
        {"architecture": "amd64", "os": "linux"},
        {"architecture": "arm64", "os": "linux"},
    ]
    assert [m["digest"] for m in document["manifests"]] == [
        str(_entry("amd64").digest),
        str(_entry("arm64").digest),
    ]
    oci = build_index([_entry("amd64", OCI_MANIFEST), _entry("arm64")])
    assert oci.media_type == OCI_INDEX and oci.digest != first.digest


def test_an_index_never_refers_to_an_index_or_twice_to_a_platform() -> None:
    with pytest.raises(ValueError, match="not one platform's image manifest"):
        build_index([_entry("amd64", OCI_INDEX)])
    with pytest.raises(ValueError, match="two images of one platform"):
        build_index([_entry("arm64"), _entry("arm64")])


def test_the_compiler_cache_is_keyed_by_platform(tmp_path: Path) -> None:
    text = (
        MINIMAL
        + f"""
[tiers.builder]
from = "debian:bookworm-slim"
template = "builder.Dockerfile.j2"
platforms = {TWO}

[tiers.ext]
from = "debian:bookworm-slim"
template = "python-runtime.Dockerfile.j2"
platforms = {TWO}
compile = {{ builder = "builder", script = "c.sh.j2" }}
"""
    )
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "c.sh.j2").write_text("echo {{ platform }}\n")
    stack = load_text(tmp_path, text)
    by_key = {p.key: p for p in plan(stack)}
    arm = cache_key(stack, by_key["ext/arm64"], by_key["builder/arm64"])
    amd = cache_key(stack, by_key["ext/amd64"], by_key["builder/amd64"])
    assert key_fields(arm) == ("demo", "ext", "default@linux-arm64")
    assert key_fields(amd) == ("demo", "ext", "default@linux-amd64")
    folder = stack.build_folder.ccache("default", "ext", "linux/arm64")
    assert folder.name == "ext@linux-arm64"


def test_doit_list_shows_each_platform_and_one_promote_per_tier(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, STACK)
    lines = doit(manifest, "list").stdout.splitlines()
    assert [line.split()[0] for line in lines] == [
        "base",
        "base/amd64",
        "base/arm64",
        "app",
        "app/amd64",
        "app/arm64",
    ]
    assert "linux/amd64, linux/arm64" in lines[0] and lines[3].split()[1:3] == ["on", "base"]
    everything = doit(manifest, "list", "--all")
    names = {line.split()[0] for line in everything.stdout.splitlines()}
    assert {
        "build:app/arm64",
        "verify:base/amd64",
        "promote:app",
        "promote:base",
        "app",
        "app/arm64",
    } <= names
    assert "promote:app/arm64" not in names


def test_check_notes_archs_no_arm_gpu_host_carries_only_for_arm64_stacks(tmp_path: Path) -> None:
    gpu = '\n[gpu]\narch_list = ["7.5", "8.9", "9.0", "10.0"]\n'
    cuda = STACK.replace('python = "3.11"', 'python = "3.11"\ncuda = "13.0.2"') + gpu
    notes = load_text(tmp_path, cuda).notes
    arm = [n for n in notes if n.startswith("gpu.arch_list (linux/arm64): ")]
    assert any(": 8.9: no Arm GPU host runs a linux/arm64 image" in n for n in arm), notes
    assert not any(": 9.0:" in n or ": 10.0:" in n or ": 7.5:" in n for n in arm), arm
    amd64_only = load_text(tmp_path, cuda.replace(TWO, '["linux/amd64"]')).notes
    assert not [n for n in amd64_only if "linux/arm64" in n]


def test_only_images_of_the_daemons_kind_are_verified_with_its_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from build_graph.docker import connection
    from build_graph.oci.platforms import host_platform
    from build_graph.stages import trust

    monkeypatch.setattr(connection, "daemon_machine", lambda: None)  # no daemon: this host
    host = host_platform()
    assert host is not None
    by_key = {p.key: p for p in plan(load_text(tmp_path, STACK))}
    assert trust.native(by_key[f"base/{host.short}"])
    other = next(k for k in by_key if k.startswith("base/") and k != f"base/{host.short}")
    assert not trust.native(by_key[other])
    host_only = plan(load_text(tmp_path, STACK.replace(f"platforms = {TWO}\n", "")))
    assert all(trust.native(p) for p in host_only)
    # DOCKER_HOST on an Arm machine: its arm64 images are the native ones
    monkeypatch.setattr(connection, "daemon_machine", lambda: "aarch64")
    assert trust.native(by_key["base/arm64"]) and not trust.native(by_key["base/amd64"])


HASHES = REPO / "tests" / "hashes" / "single-platform.json"


def test_single_platform_stacks_keep_their_task_names_and_hashes(tmp_path: Path) -> None:
    """The keys and hashes of the shipped single-platform stacks, as recorded at cf07325,
    before platforms existed. A change meant to rehash them (a template edit, say):
    regenerate with UPDATE_HASHES=1 pytest, and say so in the commit."""
    import os
    import shutil

    found = {}
    for name, source in (("quickstart", REPO / "examples" / "quickstart"), ("images.toml", REPO)):
        dest = tmp_path / name
        shutil.copytree(
            source,
            dest,
            ignore=shutil.ignore_patterns("build", "gen", ".venv", ".git", ".services", "tests"),
        )
        found[name] = {p.key: p.content_hash for p in plan(load(dest / "images.toml"))}
    if os.environ.get("UPDATE_HASHES"):
        HASHES.write_text(json.dumps(found, indent=2, sort_keys=True) + "\n")
    assert found == json.loads(HASHES.read_text())


def test_a_from_image_only_this_daemon_has_cannot_serve_two_platforms(tmp_path: Path) -> None:
    from build_graph.errors import ConfigError
    from build_graph.oci.platforms import host_platform

    manifest = write_manifest(tmp_path, STACK)
    (tmp_path / "images.lock").write_text('[from]\n"debian:bookworm-slim" = "local"\n')
    with pytest.raises(ConfigError) as caught:
        plan(load(manifest))
    issue = caught.value.issues[0]
    assert issue.file.name == "images.lock" and issue.key == 'from."debian:bookworm-slim"'
    assert "exists only in this Docker daemon" in issue.message
    host = host_platform()
    assert host is not None  # even the host's own platform alone: built per platform
    manifest.write_text(STACK.replace(TWO, f'["{host.text}"]'))
    with pytest.raises(ConfigError):
        plan(load(manifest))
    manifest.write_text(STACK.replace(f"platforms = {TWO}\n", ""))  # the host's, as before
    assert [p.key for p in plan(load(manifest))] == ["base", "app"]


def test_a_gpu_required_arm64_tier_is_told_who_can_verify_it(tmp_path: Path) -> None:
    text = (
        STACK.replace('python = "3.11"', 'python = "3.11"\ncuda = "13.0.2"')
        + '\n[gpu]\narch_list = ["9.0", "10.0"]\ntargets = ["GH200"]\n'
    )
    notes = load_text(tmp_path, text).notes
    assert any(
        n.startswith("tiers.app.verify.gpu: required, and the tier is built for linux/arm64")
        for n in notes
    ), notes
    optional = text + '\n[tiers.app.verify]\ngpu = "optional"\n'
    assert not [n for n in load_text(tmp_path, optional).notes if "tiers.app.verify.gpu" in n]
