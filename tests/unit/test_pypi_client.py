"""The index client at its door, and the generator of torch_releases.json, on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from packaging.version import Version

from build_graph.errors import (
    BadSiteSetting,
    IndexAnswerRefused,
    IndexUnreachable,
    NotOnIndex,
    RangesUnsupported,
)
from build_graph.gpu import releases
from build_graph.gpu.releases import Facts
from build_graph.pypi import refresh
from build_graph.pypi.facts import partner_row
from build_graph.pypi.fetch import get
from build_graph.pypi.simple import project
from build_graph.pypi.wheel_metadata import read_metadata
from tests.pypi_index import Index, allow_loopback, recorded, serving


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch) -> Iterator[Index]:
    allow_loopback(monkeypatch)
    with serving(Index(recorded()["projects"])) as served:
        yield served


def test_the_generator_reproduces_the_shipped_rows(index: Index, tmp_path: Path) -> None:
    shipped = releases.shipped()
    made = refresh.refresh(
        f"{index.url}/simple", Facts(shipped.index), "2026-11-23", say=lambda line: None
    )
    assert len(made.torch) == len(shipped.torch) >= 28  # torch 2.0.0 .. 2.15.0
    assert len(made.partners) == len(shipped.partners)

    def on_pypi(url: str) -> str:  # the same file, where pypi.org serves it
        return f"https://files.pythonhosted.org{urlsplit(url).path}"

    as_read = replace(
        made,
        torch=tuple(replace(r, source=on_pypi(r.source)) for r in made.torch),
        partners=tuple(replace(r, source=on_pypi(r.source)) for r in made.partners),
    )
    assert refresh.differences(shipped, as_read) == []  # every field but the day read
    assert refresh.differences(as_read, shipped) == []


def test_a_refresh_only_adds_rows(index: Index, tmp_path: Path) -> None:
    """Rows already known are kept as they are; only the missing ones are read."""
    shipped = releases.shipped()
    older = replace(shipped, torch=shipped.torch[:-1])
    output = tmp_path / "torch_releases.json"
    output.write_text(older.to_json())
    assert refresh.main(["--index", f"{index.url}/simple", "--output", str(output)]) == 0
    again = releases.from_json(output.read_text())
    assert again.torch[:-1] == shipped.torch[:-1]
    assert again.torch[-1].version == shipped.torch[-1].version
    assert index.wheel_reads() == 2  # the one torch wheel: its tail, then its METADATA


def test_refresh_check_fails_on_a_row_the_index_does_not_say(
    index: Index, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "torch_releases.json"
    output.write_text(releases.shipped().to_json())
    options = ["--index", f"{index.url}/simple", "--output", str(output), "--check"]
    assert refresh.main(options) == 0
    assert "every row is what the index says" in capsys.readouterr().out
    output.write_text(output.read_text().replace('"torch": "==2.6.0"', '"torch": "==2.5.1"'))
    assert refresh.main(options) == 1
    said = capsys.readouterr().out.splitlines()
    assert (
        len(said) == 2
        and said[0].startswith("torchaudio 2.6.0: shipped")
        and said[1].startswith("torchvision 0.21.0: shipped")
    ), said


def test_a_range_reader_reads_only_the_tail_of_a_wheel(index: Index) -> None:
    answer = recorded()["projects"]["torchaudio"]["2.6.0"]
    metadata = read_metadata(f"{index.url}{answer['path']}")
    assert metadata["Name"] == "torchaudio" and "torch==2.6.0" in str(
        metadata.get_all("Requires-Dist")
    ).replace(" ", "")


def test_a_file_host_that_ignores_ranges_is_refused_not_read_whole(index: Index) -> None:
    index.ranges = False
    answer = recorded()["projects"]["torch"]["2.6.0"]
    with pytest.raises(RangesUnsupported, match="does not answer range requests"):
        read_metadata(f"{index.url}{answer['path']}")


def test_metadata_of_another_release_is_refused(index: Index) -> None:
    index.projects["torchaudio"]["2.6.0"]["metadata"] = index.projects["torchaudio"]["2.5.0"][
        "metadata"
    ]
    with serving(index) as lying:
        page = project(f"{lying.url}/simple", "torchaudio")
        with pytest.raises(IndexAnswerRefused, match=r"names torchaudio '2\.5\.0'"):
            partner_row("torchaudio", page, Version("2.6.0"), "today")


def test_a_page_too_large_is_refused(index: Index) -> None:
    with pytest.raises(IndexAnswerRefused, match="larger than 100 bytes"):
        get(f"{index.url}/simple/torch/", {}, limit=100)


def test_not_found_and_unreachable_are_told_apart(index: Index) -> None:
    with pytest.raises(NotOnIndex):
        project(f"{index.url}/simple", "no-such-project")
    with pytest.raises(IndexUnreachable):
        project("http://127.0.0.1:9/simple", "torch")


def test_hostile_rows_in_the_data_file_are_refused() -> None:
    good = json.loads(releases.shipped().to_json())
    good["partners"][0]["torch"] = "==2.0.0; rm -rf /"
    with pytest.raises(ValueError):
        releases.from_json(json.dumps(good))
    good = json.loads(releases.shipped().to_json())
    good["torch"][0]["version"] = "../../etc"
    with pytest.raises(ValueError):
        releases.from_json(json.dumps(good))


def test_a_redirect_never_carries_the_index_password(monkeypatch: pytest.MonkeyPatch) -> None:
    """A private index that redirects (to a blob store, here another loopback server) gets
    the Basic auth; the place it redirects to never does."""
    import http.server
    import threading

    from build_graph.pypi.fetch import get

    allow_loopback(monkeypatch)
    seen: dict[int, str | None] = {}  # port -> the Authorization header it got

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            port = self.connection.getsockname()[1]
            seen[port] = self.headers.get("Authorization")
            if port == index.server_address[1]:
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{blobs.server_address[1]}/x")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    index = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    blobs = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    for server in (index, blobs):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        body, _ = get(
            f"http://ci:s3cret@127.0.0.1:{index.server_address[1]}/simple/torch/", {}, limit=1024
        )
    finally:
        for server in (index, blobs):
            server.shutdown()
            server.server_close()
    assert body == b"{}"
    assert seen[index.server_address[1]] == "Basic Y2k6czNjcmV0"  # ci:s3cret, to the index
    assert seen[blobs.server_address[1]] is None  # and nothing to where it redirected


@pytest.mark.parametrize(
    "value", ["https://[bad/simple", "pypi.org/simple", "ftp://x/simple", "https:///simple"]
)
def test_a_malformed_index_setting_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    from build_graph import settings

    monkeypatch.setenv("BUILD_GRAPH_PIP_INDEX_URL", value)
    with pytest.raises(BadSiteSetting) as caught:
        settings.index_url("https://pypi.org/simple")
    assert (
        str(caught.value).startswith(f"BUILD_GRAPH_PIP_INDEX_URL={value!r} is not an http(s) URL")
        and caught.value.exit_code == 2
    )
    monkeypatch.setenv("BUILD_GRAPH_PIP_INDEX_URL", "https://u:p@mirror.example/simple")
    assert settings.index_url("x") == "https://u:p@mirror.example/simple"


def test_an_https_page_linking_a_wheel_over_http_is_not_followed() -> None:
    from build_graph.pypi.simple import _file

    page = "https://mirror.example/simple/torch/"
    wheel = "torch-2.6.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert _file(page, "torch", f"https://files.example/{wheel}") is not None
    assert _file(page, "torch", f"http://files.example/{wheel}") is None  # downgraded
    assert _file("http://127.0.0.1:1/simple/torch/", "torch", f"http://127.0.0.1:1/{wheel}")
