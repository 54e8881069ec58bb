"""The controller's HTTP server: read-only, clear errors, never a 500."""

from __future__ import annotations

import contextlib
import gzip
import http.client
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from controller.clock import FakeClock
from controller.decisions import DecisionLog
from controller.httpserver import ControllerHTTPServer, HTTPLimits
from controller.kube.access import KubeAccess
from tests.controller.kube.test_access import Reviews
from tests.support.poll import until


@pytest.fixture
def server() -> Iterator[tuple[str, dict[str, Any]]]:
    status: dict[str, Any] = {"synced": False}

    def read_status() -> dict[str, Any]:
        if status.get("broken"):
            raise RuntimeError("state unavailable")
        return dict(status)

    srv = ControllerHTTPServer("127.0.0.1", 0, DecisionLog(FakeClock()), read_status)
    srv.start()
    try:
        yield f"http://127.0.0.1:{srv.port}", status
    finally:
        srv.stop()


def test_health_readiness_and_metrics(server: tuple[str, dict[str, Any]]) -> None:
    url, status = server
    assert requests.get(f"{url}/healthz", timeout=5).status_code == 200
    assert requests.get(f"{url}/readyz", timeout=5).status_code == 503
    status["synced"] = True
    assert requests.get(f"{url}/readyz", timeout=5).status_code == 200
    assert "python_info" in requests.get(f"{url}/metrics", timeout=5).text


def test_decisions_and_bad_limits(server: tuple[str, dict[str, Any]]) -> None:
    url, _ = server
    assert requests.get(f"{url}/api/v1/decisions", timeout=5).json() == []
    for bad in ("x", "-1", "0", "99999999"):
        resp = requests.get(f"{url}/api/v1/decisions?limit={bad}", timeout=5)
        assert resp.status_code == 400 and "limit" in resp.json()["error"]


def test_writes_and_unknown_paths_are_refused(server: tuple[str, dict[str, Any]]) -> None:
    url, _ = server
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        assert requests.request(method, f"{url}/api/v1/decisions", timeout=5).status_code == 405
    assert requests.get(f"{url}/nowhere", timeout=5).status_code == 404


def test_a_failing_status_is_answered_not_dropped(server: tuple[str, dict[str, Any]]) -> None:
    url, status = server
    status["broken"] = True
    resp = requests.get(f"{url}/api/v1/status", timeout=5)
    assert resp.status_code == 503 and "unavailable" in resp.json()["error"]


def connection_threads() -> int:
    """Threads serving one connection each (socketserver names them after process_request_thread)."""
    return sum("process_request_thread" in t.name for t in threading.enumerate())


def test_stalled_clients_are_cut_and_cannot_pile_up_threads() -> None:
    # issue 14, item 4: one thread per connection, no deadline — 50 stalled clients held 50
    # threads forever; now each has `deadline` seconds and at most `max_connections` stay open
    limits = HTTPLimits(deadline=1.0, max_connections=8)
    srv = ControllerHTTPServer("127.0.0.1", 0, DecisionLog(FakeClock()), lambda: {"synced": True}, limits=limits)
    srv.start()
    stalled = []
    try:
        for _ in range(50):
            sock = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            sock.sendall(b"GET /heal")  # and nothing more
            stalled.append(sock)
        for _ in range(10):
            assert requests.get(f"http://127.0.0.1:{srv.port}/readyz", timeout=1).status_code == 200
        settle = time.monotonic() + 5  # cut connections' threads are finishing
        while connection_threads() > limits.max_connections and time.monotonic() < settle:
            time.sleep(0.05)
        assert connection_threads() <= limits.max_connections
        for sock in stalled:
            sock.settimeout(limits.deadline + 3)
            with contextlib.suppress(ConnectionResetError):
                assert sock.recv(1) == b""  # closed by the server
    finally:
        for sock in stalled:
            sock.close()
        srv.stop()


def test_with_access_the_api_needs_an_authorized_token_and_the_probes_do_not() -> None:
    """Issue 20, defect 7: `--api-auth kubernetes` (the chart's default) — the same review as the dashboard's."""
    access = KubeAccess(Reviews({"good": "webapp", "other": "bob"}, {"webapp"}), FakeClock().now)
    srv = ControllerHTTPServer("127.0.0.1", 0, DecisionLog(FakeClock()), lambda: {"synced": True}, access=access.check)
    srv.start()
    url = f"http://127.0.0.1:{srv.port}"
    try:
        assert requests.get(f"{url}/api/v1/status", timeout=5).status_code == 401
        bad = requests.get(f"{url}/api/v1/decisions", headers={"Authorization": "Bearer other"}, timeout=5)
        assert bad.status_code == 403 and "bob may not" in bad.json()["error"]
        good = requests.get(f"{url}/api/v1/status", headers={"Authorization": "Bearer good"}, timeout=5)
        assert good.status_code == 200 and good.json() == {"synced": True}
        for path in ("/healthz", "/readyz", "/metrics"):
            assert requests.get(f"{url}{path}", timeout=5).status_code == 200, path
    finally:
        srv.stop()


def test_while_not_configured_the_api_answers_503_with_why_and_serve_swaps_in_the_answers() -> None:
    why = "not configured: cluster-name: required with --cloud-provider aws"
    srv = ControllerHTTPServer(
        "127.0.0.1", 0, DecisionLog(FakeClock()), lambda: {"notReady": why}, unavailable=lambda: why
    )
    srv.start()
    url = f"http://127.0.0.1:{srv.port}"
    try:
        assert requests.get(f"{url}/healthz", timeout=5).status_code == 200  # alive: no restart
        ready = requests.get(f"{url}/readyz", timeout=5)
        assert (ready.status_code, ready.text) == (503, why)
        for path in ("/api/v1/status", "/api/v1/nodes", "/api/v1/decisions", "/api/v1/explain/nodes/n1"):
            got = requests.get(url + path, timeout=5)
            assert (got.status_code, got.json()) == (503, {"error": why}), path
        posted = requests.post(f"{url}/api/v1/what-if", data="{}", timeout=5)
        assert (posted.status_code, posted.json()) == (503, {"error": why})
        assert requests.get(f"{url}/metrics", timeout=5).status_code == 200
        srv.serve(DecisionLog(FakeClock()), lambda: {"synced": True}, {"/api/v1/nodes": lambda: {"nodes": []}})
        assert requests.get(f"{url}/readyz", timeout=5).text == "ok"
        assert requests.get(f"{url}/api/v1/nodes", timeout=5).json() == {"nodes": []}
        assert requests.get(f"{url}/api/v1/decisions", timeout=5).json() == []
    finally:
        srv.stop()


# --- /metrics: gzip when asked, the text type Karpenter's Go client names, one writing at a time ---

TEXT = b'# HELP a_gauge A gauge.\n# TYPE a_gauge gauge\na_gauge{v="x"} 1.0\n' * 200


def raw_get(port: int, path: str, headers: list[tuple[str, bytes]]) -> http.client.HTTPResponse:
    """A GET with exactly `headers` (http.client adds no Accept-Encoding of its own here)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.putrequest("GET", path, skip_accept_encoding=True)
    for name, value in headers:
        conn.putheader(name, value)
    conn.endheaders()
    return conn.getresponse()


@pytest.fixture
def metrics_server() -> Iterator[ControllerHTTPServer]:
    srv = ControllerHTTPServer("127.0.0.1", 0, DecisionLog(FakeClock()), lambda: {"synced": True}, metrics=lambda: TEXT)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def test_metrics_plain_without_accept_encoding(metrics_server: ControllerHTTPServer) -> None:
    resp = raw_get(metrics_server.port, "/metrics", [])
    assert resp.status == 200 and resp.read() == TEXT
    assert resp.getheader("Content-Type") == "text/plain; version=0.0.4; charset=utf-8"
    assert resp.getheader("Content-Encoding") is None and resp.getheader("Content-Length") == str(len(TEXT))


def test_metrics_gzipped_when_asked(metrics_server: ControllerHTTPServer) -> None:
    resp = raw_get(metrics_server.port, "/metrics", [("Accept-Encoding", b"deflate, gzip;q=1.0, *;q=0.5")])
    body = resp.read()
    assert resp.status == 200 and resp.getheader("Content-Encoding") == "gzip"
    assert resp.getheader("Content-Type") == "text/plain; version=0.0.4; charset=utf-8"
    assert gzip.decompress(body) == TEXT and len(body) < len(TEXT) // 10
    assert resp.getheader("Content-Length") == str(len(body)) and resp.getheader("Vary") == "Accept-Encoding"
    # what Prometheus's scraper sends, through a client that decodes it
    got = requests.get(f"http://127.0.0.1:{metrics_server.port}/metrics", timeout=5)
    assert got.headers["Content-Encoding"] == "gzip" and got.content == TEXT


@pytest.mark.parametrize(
    "value", [b"", b"GZIP", b"x-gzip", b"gzip-ish", b"\xff\xfe\x00", b";;,,;", b"identity, *", b"a" * 60_000]
)
def test_metrics_plain_for_an_odd_accept_encoding(metrics_server: ControllerHTTPServer, value: bytes) -> None:
    resp = raw_get(metrics_server.port, "/metrics", [("Accept-Encoding", value)])
    assert resp.status == 200 and resp.getheader("Content-Encoding") is None and resp.read() == TEXT


def test_metrics_accept_encoding_twice_reads_the_first(metrics_server: ControllerHTTPServer) -> None:
    resp = raw_get(metrics_server.port, "/metrics", [("Accept-Encoding", b"identity"), ("Accept-Encoding", b"gzip")])
    assert resp.getheader("Content-Encoding") is None and resp.read() == TEXT  # as Go's Header.Get


def test_a_header_too_long_is_refused_not_a_500(metrics_server: ControllerHTTPServer) -> None:
    resp = raw_get(metrics_server.port, "/metrics", [("Accept-Encoding", b"gzip," * 20_000)])
    assert resp.status == 431


def test_a_flood_of_scrapes_is_one_writing_and_the_probes_still_answer() -> None:
    release, calls = threading.Event(), []

    def slow() -> bytes:  # a writing held open until the test lets it finish
        calls.append(1)
        assert release.wait(10)
        return TEXT

    srv = ControllerHTTPServer("127.0.0.1", 0, DecisionLog(FakeClock()), lambda: {"synced": True}, metrics=slow)
    srv.start()
    url = f"http://127.0.0.1:{srv.port}"
    answers: list[requests.Response] = []
    threads = [threading.Thread(target=lambda: answers.append(requests.get(f"{url}/metrics", timeout=10)))
               for _ in range(20)]  # fmt: skip
    try:
        threads[0].start()
        until(lambda: calls, 5, "the first scrape writing")
        for thread in threads[1:]:
            thread.start()
        until(lambda: srv.scrapes.waiting == 19, 5, "19 scrapes waiting for it")
        for path in ("/healthz", "/readyz"):
            assert requests.get(url + path, timeout=2).status_code == 200, path
        release.set()
        for thread in threads:
            thread.join(10)
        assert len(calls) == 1 and [a.status_code for a in answers] == [200] * 20
        assert {a.content for a in answers} == {TEXT}
    finally:
        release.set()
        srv.stop()


def test_a_scrape_not_written_within_the_deadline_is_answered_503() -> None:
    release, calls = threading.Event(), []

    def held() -> bytes:
        calls.append(1)
        return TEXT if release.wait(10) else b""

    limits = HTTPLimits(deadline=1.0)
    srv = ControllerHTTPServer("127.0.0.1", 0, DecisionLog(FakeClock()), lambda: {"synced": True}, limits=limits,
                               metrics=held)  # fmt: skip
    srv.start()
    url = f"http://127.0.0.1:{srv.port}"

    def scrape() -> None:  # answered, or cut at its deadline: either is fine here
        with contextlib.suppress(requests.RequestException):
            requests.get(f"{url}/metrics", timeout=10)

    first = threading.Thread(target=scrape)
    try:
        first.start()  # writing, held: its own connection is cut at the deadline
        until(lambda: calls, 5, "the first scrape writing")
        late = requests.get(f"{url}/metrics", timeout=5)
        assert late.status_code == 503 and "TimeoutError" in late.json()["error"]
        assert requests.get(f"{url}/healthz", timeout=2).status_code == 200
    finally:
        release.set()
        first.join(10)
        srv.stop()
