"""Slow clients cannot block admission (issue 14, items 4 and the soak test).

The real `karpy webapp` (gunicorn, TLS, 127.0.0.1 only) under 50 stalled connections — each sent
3 bytes of a TLS ClientHello, or a TLS handshake and half a request, and then nothing — plus
normal load: every normal review is answered within the 1 s the client allows (the API server
would otherwise apply failurePolicy Fail and deny the write), and the stalled connections are
closed once the request deadline passes. Bounded: 50 sockets, 60 reviews, a few seconds.
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support.procs import free_port, karpy, stop, wait_until
from webapp.worker import request_complete

REQUEST_TIMEOUT = 3  # the server's deadline for a handshake and a complete request, in seconds
STALLED = 50
CLIENT_TIMEOUT = 1.0  # what a normal review is allowed


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, Path]]:
    tmp = tmp_path_factory.mktemp("webapp-soak")
    subprocess.run(
        [sys.executable, "-m", "karpy", "certs", "generate", "--dir", str(tmp / "certs"), "--host", "127.0.0.1"],
        check=True,
        capture_output=True,
    )
    port = free_port()
    proc = karpy(
        [
            "webapp",
            "--cert-dir",
            str(tmp / "certs"),
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
            "--request-timeout",
            str(REQUEST_TIMEOUT),
        ],
        tmp / "webapp.log",
    )
    ca = tmp / "certs" / "ca.crt"
    try:
        wait_until(
            lambda: requests.get(f"https://127.0.0.1:{port}/healthz", verify=str(ca), timeout=1).ok, 30, "webapp", proc
        )
        yield "127.0.0.1", port, ca
    finally:
        stop(proc)


def review_body(uid: str) -> bytes:
    obj = {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": uid}, "spec": {}}
    request = {
        "uid": uid,
        "operation": "CREATE",
        "object": obj,
        "kind": {"group": "karpenter.sh", "version": "v1alpha5", "kind": "Provisioner"},
    }
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()


def stalled_hello(host: str, port: int) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=5)
    sock.sendall(b"\x16\x03\x01")  # the first 3 bytes of a TLS record carrying a ClientHello
    return sock


def stalled_request(host: str, port: int, ca: Path) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(ca))
    sock = context.wrap_socket(socket.create_connection((host, port), timeout=5), server_hostname=host)
    sock.sendall(b"POST /webhooks/validate HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")  # then nothing
    return sock


def closed_by_server(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except (TimeoutError, ssl.SSLError):
        return False
    except OSError:
        return True


def normal_reviews(url: str, ca: Path, count: int, prefix: str) -> list[str]:
    """Send `count` reviews on fresh sessions; the uids of those not answered in time (or wrongly)."""
    failed = []
    for i in range(count):
        uid = f"{prefix}-{i}"
        try:
            with requests.Session() as session:
                resp = session.post(
                    f"{url}/webhooks/mutate",
                    data=review_body(uid),
                    verify=str(ca),
                    timeout=CLIENT_TIMEOUT,
                    headers={"Content-Type": "application/json"},
                )
            if resp.status_code != 200 or resp.json()["response"]["uid"] != uid:
                failed.append(uid)
        except requests.RequestException:
            failed.append(uid)
    return failed


def test_reviews_are_answered_in_time_under_50_stalled_connections(server: tuple[str, int, Path]) -> None:
    host, port, ca = server
    url = f"https://{host}:{port}"
    stalled: list[socket.socket] = [stalled_hello(host, port) for _ in range(STALLED // 2)]
    stalled += [stalled_request(host, port, ca) for _ in range(STALLED - len(stalled))]
    try:
        failures: list[str] = []
        threads = [
            threading.Thread(target=lambda p=p: failures.extend(normal_reviews(url, ca, 15, p)))
            for p in ("a", "b", "c", "d")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with requests.Session() as session:  # kept alive, as the API server does
            for i in range(10):
                resp = session.post(
                    f"{url}/webhooks/validate",
                    data=review_body(f"k-{i}"),
                    verify=str(ca),
                    timeout=CLIENT_TIMEOUT,
                    headers={"Content-Type": "application/json"},
                )
                assert resp.json()["response"]["uid"] == f"k-{i}"
        assert failures == []
        started = time.monotonic()
        assert all(closed_by_server(sock, REQUEST_TIMEOUT + 3 - (time.monotonic() - started)) for sock in stalled)
    finally:
        for sock in stalled:
            sock.close()


@pytest.mark.parametrize(
    ("buffer", "complete"),
    [
        (b"POST / HTTP/1.1\r\nHost: x\r\n", False),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", True),
        (b"POST / HTTP/1.1\r\ncontent-length: 4\r\n\r\n{}", False),
        (b'POST / HTTP/1.1\r\ncontent-length: 4\r\n\r\n{""}', True),
        (b"POST / HTTP/1.1\r\nContent-Length: nope\r\n\r\n", True),  # gunicorn answers 400
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n", False),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", True),
        (b"POST / HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n" + b"x" * 101, True),  # over the limit: 413
        (b"GET /" + b"x" * 70_000, True),  # headers over 64 KiB: gunicorn refuses them
    ],
)
def test_a_request_is_handed_to_a_thread_only_once_complete(buffer: bytes, complete: bool) -> None:
    assert request_complete(buffer, max_body=100) is complete
