"""With no Docker daemon to ask, planning judges reports as a CPU runner (issue 20), and
'no daemon' is said in one line naming what needed it."""

from __future__ import annotations

from pathlib import Path

import pytest

from build_graph.docker import connection
from build_graph.errors import DaemonUnreachable, EnvironmentProblem
from build_graph.stages import trust
from build_graph.verify.request import fingerprint, trusted_fingerprints
from tests.helpers import WANT


def test_a_runner_without_a_daemon_trusts_what_a_cpu_runner_trusts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(connection, "reachable_gpu_runtime", lambda: None)
    assert trust.gpu_here() is False
    # Both kinds of report count, so a stack verified anywhere plans as up to date.
    assert trusted_fingerprints(WANT, trust.gpu_here()) == [
        fingerprint(WANT, False),
        fingerprint(WANT, True),
    ]


def test_a_gpu_runner_whose_daemon_answers_wants_its_own_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(connection, "reachable_gpu_runtime", lambda: True)
    assert trusted_fingerprints(WANT, trust.gpu_here()) == [fingerprint(WANT, True)]


def test_no_socket_is_no_daemon_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The unit guard refuses any connect with an AssertionError: a socket file that does not
    # exist is refused by the OS before that, as on a host where Docker is stopped.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")

    def absent(self: object, where: object) -> None:
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr("socket.socket.connect", absent)
    connection.reachable_gpu_runtime.cache_clear()
    connection.daemon_info.cache_clear()
    try:
        assert connection.reachable_gpu_runtime() is None
        with pytest.raises(DaemonUnreachable) as caught:
            connection.gpu_runtime()
    finally:
        connection.reachable_gpu_runtime.cache_clear()
        connection.daemon_info.cache_clear()
    assert str(caught.value) == (
        f"cannot reach the Docker daemon at unix://{tmp_path}/absent.sock (No such file or "
        "directory); start it (systemctl start docker; in build-graph's own checkout "
        "scripts/services.sh up) or point DOCKER_HOST at one"
    )


def test_the_line_names_what_needed_the_daemon() -> None:
    problem = connection.unreachable("Connection refused").needs("build:training")
    assert isinstance(problem, EnvironmentProblem) and problem.exit_code == 3
    assert str(problem).startswith(
        "build:training needs the Docker daemon: cannot reach the Docker daemon at "
    )
    assert "\n" not in str(problem)


def test_docker_py_wrapping_is_read_down_to_the_os_error() -> None:
    class ProtocolError(Exception):
        pass

    class DockerException(Exception):
        pass

    try:
        try:
            raise ConnectionError(
                ProtocolError(
                    "Connection aborted.", FileNotFoundError(2, "No such file or directory")
                )
            )
        except ConnectionError:
            raise DockerException(
                "Error while fetching server API version: ('Connection "
                "aborted.', FileNotFoundError(2, ...))"
            ) from None
    except DockerException as exc:
        caught = exc
    found = connection._innermost_os_error(caught)
    assert found is not None and found.strerror == "No such file or directory"
    assert isinstance(connection._not_answering(caught), DaemonUnreachable)


def test_a_daemon_that_answers_with_an_error_is_not_an_absent_daemon() -> None:
    """Permission denied on the socket, or an HTTP error: a problem said as such, never
    'no daemon' (planning would go on without it and a GPU runner judge as a CPU one)."""
    denied = PermissionError(13, "Permission denied")
    problem = connection._not_answering(RuntimeError("wrapped", denied))
    assert isinstance(problem, EnvironmentProblem)
    assert not isinstance(problem, DaemonUnreachable)
    assert "Permission denied" in str(problem) and "could not be used" in str(problem)
