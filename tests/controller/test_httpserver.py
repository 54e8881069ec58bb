"""The controller's HTTP server: read-only, clear errors, never a 500."""

from __future__ import annotations

import contextlib
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
