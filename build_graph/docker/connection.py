"""Whether a Docker daemon is there, and the one client for it (docker-py).

`client()` connects once per process; `gpu_runtime()` asks the daemon whether containers
can be given GPUs. 'No daemon here' (no socket, nothing listening) is DaemonUnreachable,
which planning gets by without; a daemon that answers with an error, or refuses us, is
another EnvironmentProblem, said as such: a sick daemon is never read as an absent one.

The daemon is the one DOCKER_HOST names (with DOCKER_TLS_VERIFY / DOCKER_CERT_PATH, or
ssh://), as docker-py's from_env reads it; `endpoint()` is that address, which the docker
CLI for BuildKit is handed too, so both always talk to the same daemon. A docker context
(DOCKER_CONTEXT, or `docker context use`) is not followed by docker-py: with DOCKER_HOST
unset, a context other than 'default' is refused with the fix rather than builds and
containers going to two daemons.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from build_graph.errors import DaemonUnreachable, EnvironmentProblem

# docker-py (and requests under it) is imported on first use: a no-op run whose records
# answer every question never pays for it.
if TYPE_CHECKING:
    import docker

_client: docker.DockerClient | None = None
DEFAULT_HOST = "unix:///var/run/docker.sock"


def endpoint() -> str:
    """The daemon's address as docker-py and the CLI are given it."""
    return os.environ.get("DOCKER_HOST") or DEFAULT_HOST


def check_context() -> None:
    """Refuse a docker context that would send the CLI elsewhere than docker-py goes."""
    if os.environ.get("DOCKER_HOST"):
        return  # the CLI, too, follows DOCKER_HOST over any context
    name = os.environ.get("DOCKER_CONTEXT") or _configured_context()
    if name and name != "default":
        raise EnvironmentProblem(
            f"the docker context {name!r} is selected (DOCKER_CONTEXT or `docker context "
            "use`), and build-graph follows DOCKER_HOST only; set DOCKER_HOST to that "
            f"context's endpoint (docker context inspect {name} --format "
            "'{{.Endpoints.docker.Host}}', with DOCKER_TLS_VERIFY/DOCKER_CERT_PATH if it "
            "uses TLS) or `docker context use default`"
        )


def _configured_context() -> str | None:
    import json

    folder = os.environ.get("DOCKER_CONFIG") or os.path.expanduser("~/.docker")
    try:
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError):
        return None
    name = config.get("currentContext") if isinstance(config, dict) else None
    return name if isinstance(name, str) else None


def client() -> docker.DockerClient:
    """A shared client; long timeout because a silent compile step can last many minutes."""
    global _client
    import docker
    import docker.errors

    if _client is None:
        check_context()
        try:
            # ssh:// through the ssh command, as the docker CLI does (its config, its agent).
            _client = docker.from_env(timeout=24 * 3600, use_ssh_client=True)
            _client.ping()
        except docker.errors.DockerException as exc:
            _client = None
            raise _not_answering(exc) from None
    return _client


@dataclass(frozen=True)
class DaemonInfo:
    """What we read of the daemon's /info, parsed where it arrives."""

    root_dir: str  # DockerRootDir: where its data lives ('' when it does not say)
    architecture: str | None  # the machine it runs on: 'x86_64', 'aarch64'
    runtimes: frozenset[str]  # 'runc', 'nvidia', ...
    containerd_store: bool  # images in the containerd image store (Docker 29's default)

    @classmethod
    def read(cls, data: object) -> DaemonInfo:
        found = data if isinstance(data, dict) else {}
        machine, runtimes = found.get("Architecture"), found.get("Runtimes")
        status = found.get("DriverStatus")
        return cls(
            root_dir=str(found.get("DockerRootDir") or ""),
            architecture=machine if isinstance(machine, str) else None,
            runtimes=frozenset(map(str, runtimes)) if isinstance(runtimes, dict) else frozenset(),
            containerd_store=isinstance(status, list)
            and any(
                isinstance(row, list)
                and row[:1] == ["driver-type"]
                and "containerd.snapshotter" in str(row[1:])
                for row in status
            ),
        )


@dataclass(frozen=True)
class DaemonVersion:
    """What we read of the daemon's /version, parsed where it arrives."""

    engine: str  # Docker Engine's version, '28.5.2'; '' for another engine behind its API
    min_api: str  # the oldest API version it accepts, '1.24' ('' when it does not say)

    @classmethod
    def read(cls, data: object) -> DaemonVersion:
        found = data if isinstance(data, dict) else {}
        components = found.get("Components")
        names = (
            {c.get("Name") for c in components if isinstance(c, dict)}
            if isinstance(components, list)
            else set()
        )
        # Podman names its component "Podman Engine"; Docker's is "Engine".
        engine = str(found.get("Version") or "") if "Engine" in names else ""
        return cls(engine=engine, min_api=str(found.get("MinAPIVersion") or ""))


@cache
def daemon_info() -> DaemonInfo:
    """The daemon's /info, asked once per process. Over the Unix socket itself when
    DOCKER_HOST names one (or is unset): every no-op run asks this, and docker-py's import
    alone costs more than the call."""
    host = endpoint()
    if host.startswith("unix://"):
        return DaemonInfo.read(_get_over_socket(host.removeprefix("unix://"), "/info"))
    return DaemonInfo.read(client().info())


@cache
def daemon_version() -> DaemonVersion:
    """The daemon's /version (its own API version and the oldest it accepts), asked once
    per process."""
    host = endpoint()
    if host.startswith("unix://"):
        return DaemonVersion.read(_get_over_socket(host.removeprefix("unix://"), "/version"))
    return DaemonVersion.read(client().version())


def docker_engine_version() -> str:
    """'28.5.2': Docker Engine's version; '' when the daemon is another engine behind
    Docker's API."""
    return daemon_version().engine


def gpu_runtime() -> bool:
    """Whether containers here can be given GPUs (the daemon knows the nvidia runtime)."""
    return "nvidia" in daemon_info().runtimes


def daemon_machine() -> str | None:
    """What the daemon's machine is ('x86_64', 'aarch64'): the images it runs natively
    (it may be another machine than this one: DOCKER_HOST); None when no daemon answers."""
    try:
        return daemon_info().architecture
    except DaemonUnreachable:
        return None


@cache
def reachable_gpu_runtime() -> bool | None:
    """gpu_runtime(), or None when no daemon answers; asked once per process (a daemon
    that is down is not asked again for every tier's up-to-date check)."""
    try:
        return gpu_runtime()
    except DaemonUnreachable:
        return None


def _get_over_socket(socket_path: str, path: str) -> object:
    import http.client
    import json
    import socket

    class UnixConnection(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(10)
            self.sock.connect(socket_path)

    try:
        connection = UnixConnection("localhost", timeout=10)
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read()
        connection.close()
    except OSError as exc:
        raise _not_answering(exc) from None
    if response.status != 200:  # a daemon that answers, with an error: not 'no daemon'
        raise EnvironmentProblem(
            f"the Docker daemon at unix://{socket_path} answered "
            f"{path} with HTTP {response.status}; see its logs"
        )
    try:
        data: object = json.loads(body)
    except ValueError:
        raise EnvironmentProblem(
            f"the Docker daemon at unix://{socket_path} answered {path} "
            "with something that is not JSON; see its logs"
        ) from None
    return data


# What 'no daemon here' looks like from a client: no socket, nothing listening, no route.
_ABSENT = {
    errno.ENOENT,
    errno.ECONNREFUSED,
    errno.ENOTCONN,
    errno.EHOSTUNREACH,
    errno.ENETUNREACH,
    errno.ETIMEDOUT,
    errno.ECONNRESET,
}


def _not_answering(exc: BaseException) -> EnvironmentProblem:
    """DaemonUnreachable when no daemon is there (planning then goes on without one);
    any other failure (permission denied, TLS, an HTTP error) is a problem said as such:
    a sick daemon is never read as an absent one."""
    cause = _innermost_os_error(exc)
    host = endpoint()
    if cause is not None and cause.errno in _ABSENT:
        return unreachable(cause.strerror or str(cause))
    why = (cause.strerror if cause is not None and cause.strerror else None) or short_error(exc)
    return EnvironmentProblem(
        f"the Docker daemon at {host} could not be used ({why}); "
        "check its logs and your access to it"
    )


def unreachable(why: str) -> DaemonUnreachable:
    """The one wording of 'no daemon answers': where it was looked for, and the fix."""
    return DaemonUnreachable(
        f"cannot reach the Docker daemon at {endpoint()} ({why}); start it (systemctl start "
        "docker; in build-graph's own checkout scripts/services.sh up) or point DOCKER_HOST "
        "at one"
    )


def _innermost_os_error(exc: BaseException) -> OSError | None:
    """The OS error under docker-py's 'Error while fetching server API version: (...)' (a
    missing or refused socket), not the wrapping of three libraries; None when none."""
    pending: list[object] = [exc]
    seen: set[int] = set()
    while pending:
        item = pending.pop(0)
        if id(item) in seen:  # a cause chain may loop
            continue
        seen.add(id(item))
        if isinstance(item, OSError) and item.errno is not None:
            return item
        if isinstance(item, BaseException):
            pending += [*item.args, item.__cause__, item.__context__]
        elif isinstance(item, tuple):
            pending += item
    return None


def short_error(exc: BaseException) -> str:
    explanation = getattr(exc, "explanation", None)
    text = str(explanation or exc)
    return text.strip().splitlines()[0][:300] if text.strip() else type(exc).__name__
