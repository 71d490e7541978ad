"""Docker images through docker-py: build, push, pull, inspect.

With containers.py (running containers) and connection.py (the client, whether a daemon is
there), the only code that talks to the Docker daemon.

Each call logs what it does ('+ docker build ...'). A missing daemon, an unreachable
registry or a refused push becomes a DaemonUnreachable/RegistryError with one line that
says what to start or fix.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from build_graph.docker.connection import (
    client,
    daemon_info,
    short_error,
)
from build_graph.errors import BuildFailed, PullFailed, RegistryError, UntrustedAnswer
from build_graph.log import last_output, log
from build_graph.oci import problems
from build_graph.oci.digest import Digest, parse_digest
from build_graph.oci.platforms import stated_platform
from build_graph.oci.refs import registry_of

# docker-py (and requests under it) is imported on first use: a no-op run whose records
# answer every question never pays for it.
if TYPE_CHECKING:
    pass

_STEP_RE = re.compile(r"^Step (\d+)/(\d+) : (.*)")
_STATUS_DIGEST = re.compile(r"^\S+: digest: (\S+) size: \d+$")

PUSH_ATTEMPTS = 3
_SERVER_ERROR = re.compile(
    r"\bHTTP status: 5\d\d\b|\b5\d\d (?:Internal Server Error|Bad Gateway|"
    r"Service Unavailable|Gateway Timeout)\b"
)


def split_ref(ref: str) -> tuple[str, str]:
    """'host:5000/repo/x:tag' -> ('host:5000/repo/x', 'tag'); a digest ref keeps its digest
    as the tag; no tag means 'latest'. docker-py's own parser, so we agree with the daemon."""
    from docker.utils import parse_repository_tag

    repo, tag = parse_repository_tag(ref)
    return repo, tag or "latest"


def local_digest(ref: str) -> str | None:
    """For a local image: the registry digest it was pulled with (RepoDigests), or '' when
    it has none (built or imported here); None when the daemon has no such image.

    The containerd image store gives every image a RepoDigests entry, pulled or not (a
    `docker load`ed or imported image names its own manifest digest there, which no
    registry holds), so there a local copy proves nothing about any registry: ''."""
    import docker.errors

    try:
        image = client().images.get(ref)
    except docker.errors.ImageNotFound:
        return None
    if containerd_store():
        return ""
    repo = split_ref(ref)[0]
    for entry in image.attrs.get("RepoDigests") or []:
        name, _, digest = str(entry).partition("@")
        if name in (repo, f"docker.io/{repo}", f"docker.io/library/{repo}"):
            return digest
    return ""


def image_exists_locally(ref: str) -> bool:
    import docker.errors

    try:
        client().images.get(ref)
    except docker.errors.ImageNotFound:
        return False
    return True


def build(
    context: IO[bytes],
    tag: str,
    *,
    name: str,
    buildargs: Mapping[str, str] | None = None,
    on_line: Callable[[str], None] = log,
    platform: str | None = None,
) -> str:
    """Build from a tar context (Dockerfile at its root); returns the image id.

    The tag is applied only when every step succeeded. A failing step raises
    BuildFailed naming the step, the instruction and the output's last lines.
    """
    log(f"+ docker build --network=host -t {tag} (tier {name})")
    started = time.monotonic()
    step, tail = "", list[str]()
    image_id = None
    stream = client().api.build(
        fileobj=context,
        custom_context=True,
        tag=tag,
        rm=True,
        forcerm=True,
        decode=True,
        network_mode="host",
        buildargs=dict(buildargs or {}),
        pull=False,
        platform=platform,
    )
    for chunk in stream:
        if "error" in chunk:
            raise BuildFailed(
                f"build of {name} failed at step {step or '?'}: "
                f"{chunk['error'].strip()}\n  {last_output(tail)}"
            )
        line = str(chunk.get("stream", "")).rstrip()
        if "aux" in chunk and "ID" in chunk["aux"]:
            image_id = str(chunk["aux"]["ID"])
        if not line:
            continue
        match = _STEP_RE.match(line)
        if match:
            step = f"{match[1]}/{match[2]} ({match[3][:100]})"
            tail = []
            on_line(
                f"[{name}] step {match[1]}/{match[2]} "
                f"{time.monotonic() - started:6.1f}s  {match[3][:120]}"
            )
        else:
            tail.append(line)
            on_line(f"[{name}]   {line}")
    if image_id is None:
        image_id = str(client().images.get(tag).id)
    log(f"[{name}] built {tag} in {time.monotonic() - started:.1f}s")
    return image_id


def push(ref: str) -> Digest | None:
    """Push `ref`; returns the digest the daemon says it pushed (parsed), None when its
    stream named none. Only a note: the digest that counts is the one the registry holds
    under the tag (stages/push_act.py asks it). Raises RegistryError naming the registry.

    The daemon says the digest in one of two ways: the classic image store in an `aux`
    record, the containerd image store (Docker 29's default) only in a status line
    '<tag>: digest: sha256:... size: N'; both are read, neither is required.

    A 5xx from the registry is retried (PUSH_ATTEMPTS in all, backing off): two runners
    pushing the same layers at once can make a registry fail one upload (distribution 2.8
    answered 500 to one of two racing pushes here). Anything else fails at once."""
    for attempt in range(1, PUSH_ATTEMPTS + 1):
        try:
            return _push_once(ref)
        except RegistryError as exc:
            if attempt == PUSH_ATTEMPTS or not _SERVER_ERROR.search(str(exc)):
                raise
            log(
                f"  the registry failed ({str(exc)[:200]}); pushing again ({attempt + 1}/"
                f"{PUSH_ATTEMPTS})"
            )
            time.sleep(attempt)
    raise AssertionError("unreachable")


def _push_once(ref: str) -> Digest | None:
    import docker.errors

    repo, tag = split_ref(ref)
    host = registry_of(ref)
    log(f"+ docker push {ref}")
    digest = None
    try:
        for chunk in client().api.push(repo, tag=tag, stream=True, decode=True):
            if "error" in chunk:
                said = str(chunk["error"]).strip()
                raise RegistryError(
                    f"push of {ref} refused by the registry {host}: "
                    f"{said[:300]}; {problems.hint(host, said)}"
                )
            aux = chunk.get("aux") or {}
            if "Digest" in aux:
                digest = parse_digest(aux["Digest"])
            elif digest is None and (line := _STATUS_DIGEST.match(str(chunk.get("status")))):
                digest = parse_digest(line[1])
    except docker.errors.APIError as exc:
        raise RegistryError(
            f"push of {ref} to the registry {host} failed: "
            f"{short_error(exc)}; {problems.hint(host, str(exc))}"
        ) from None
    except ValueError as exc:
        raise UntrustedAnswer(
            f"push of {ref}: the registry {host} answered a digest that is not one: {exc}"
        ) from None
    return digest


def pull(ref: str, platform: str | None = None) -> None:
    """Pull `ref` (a tag or a digest reference); of an index, `platform`'s image."""
    import docker.errors

    repo, tag_or_digest = split_ref(ref)
    log(f"+ docker pull {f'--platform {platform} ' if platform else ''}{ref}")
    try:
        for chunk in client().api.pull(
            repo, tag=tag_or_digest, stream=True, decode=True, platform=platform
        ):
            if "error" in chunk:
                said = str(chunk["error"]).strip()
                raise PullFailed(
                    f"pull of {ref} from the registry {registry_of(ref)} "
                    f"failed: {said[:300]}; "
                    f"{problems.hint(registry_of(ref), said)}",
                    said,
                )
    except docker.errors.APIError as exc:
        raise PullFailed(
            f"pull of {ref} from the registry {registry_of(ref)} failed: "
            f"{short_error(exc)}; {problems.hint(registry_of(ref), str(exc))}",
            short_error(exc),
        ) from None


def save(ref: str, path: Path) -> None:
    """`docker save` of the local image `ref` into an archive at `path` (an OCI image
    layout on the containerd store), streamed to disk."""
    import docker.errors

    log(f"+ docker save -o {path.name} {ref}")
    try:
        with path.open("wb") as out:
            for chunk in client().images.get(ref).save(named=False):
                out.write(chunk)
    except (OSError, docker.errors.DockerException) as exc:
        raise BuildFailed(f"docker save of {ref} failed: {short_error(exc)}") from None


@dataclass(frozen=True)
class LocalImage:
    """What the daemon holds under a ref, read in one inspect."""

    id: str  # 'sha256:...': the digest of what it is, so of every platform an index holds
    # (the containerd store), or of its config (the classic store)
    platform: str  # 'linux/arm64': the os and architecture its config states
    size: int | None  # uncompressed bytes; None where the daemon cannot say


def local_image(ref: str, platform: str | None = None) -> LocalImage | None:
    """The local image `ref` in one inspect; None when the daemon holds none.

    Its size is what `docker images` shows on the classic store (the sum of its unpacked
    layers), on every store: the containerd image store's own `Size` is compressed content
    (fastext: 167 MB there, 227 MB unpacked), so there the `platform` image's
    `ImageData.Size.Unpacked` is read from the same inspect (API 1.48+, `manifests=1`; an
    older API leaves it out: None). `platform` None: the one its config states."""
    import docker.errors

    attrs: dict[str, Any] | None = None
    if containerd_store():
        api = client().api  # a requests session: the daemon's own URL scheme, its adapters
        answer = api.get(
            f"{api.base_url}/v{api.api_version}/images/{ref}/json", params={"manifests": "1"}
        )
        if answer.status_code == 404:
            return None
        try:
            found = answer.json() if answer.status_code == 200 else None
        except ValueError:  # not JSON: asked again below, where docker-py words the error
            found = None
        if isinstance(found, dict) and isinstance(found.get("Id"), str):
            attrs = found
    if attrs is None:  # the classic store, or an answer docker-py puts in its own words
        try:
            attrs = client().images.get(ref).attrs
        except docker.errors.ImageNotFound:
            return None
        except docker.errors.DockerException as exc:
            raise BuildFailed(f"inspect of {ref} failed: {short_error(exc)}") from None
    image_id = attrs.get("Id")
    if not isinstance(image_id, str) or not image_id.startswith("sha256:"):
        raise BuildFailed(f"inspect of {ref}: the Docker daemon named no image id ({image_id!r})")
    stated = f"{attrs.get('Os', '?')}/{attrs.get('Architecture', '?')}"
    return LocalImage(image_id, stated, _unpacked(attrs, platform or stated))


def _unpacked(attrs: dict[str, Any], platform: str) -> int | None:
    if not containerd_store():
        size = attrs.get("Size")
        return size if isinstance(size, int) else None
    listed = attrs.get("Manifests")
    for entry in listed if isinstance(listed, list) else []:
        data = entry.get("ImageData") if isinstance(entry, dict) else None
        if not isinstance(data, dict) or entry.get("Kind") != "image":
            continue
        if stated_platform(data.get("Platform")) == platform:
            size = data.get("Size")
            unpacked = size.get("Unpacked") if isinstance(size, dict) else None
            # 0 until a snapshot of it exists (moby's snapshot usage): not a size
            return unpacked if isinstance(unpacked, int) and unpacked > 0 else None
    return None


def held(ref: str, platform: str | None = None) -> LocalImage:
    """The local image `ref`, pulled first when only the registry has it."""
    return local_image(ref, platform) or pulled(ref, platform)


def pulled(ref: str, platform: str | None = None) -> LocalImage:
    """Pull `ref`, then the local image it made (one pull, never a second)."""
    pull(ref, platform)
    found = local_image(ref, platform)
    if found is None:
        raise BuildFailed(f"{ref} was pulled, but the Docker daemon does not hold it")
    return found


def containerd_store() -> bool:
    """Whether the daemon keeps images in the containerd image store (Docker 29's default
    for fresh installs) rather than the classic graph drivers: its /info says so."""
    return daemon_info().containerd_store
