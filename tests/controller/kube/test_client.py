"""`KubeClient` (`controller/kube/client.py`) over real HTTP against a scripted API server.

A tiny `http.server` on 127.0.0.1 plays kube-apiserver: each test queues the answers it needs
and reads back the requests the client made (method, path, query, headers, body). The real
control plane is exercised by `tests/e2e`; these pin the adapter's contract — paths, merge
patches, typed errors per status, watch streaming across chunk boundaries.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from controller.kube.client import KubeClient, WatchEvent
from controller.kube.errors import (
    AlreadyExistsError,
    ConflictError,
    ConnectionLostError,
    GoneError,
    KubeError,
    NotFoundError,
    TooManyRequestsError,
)
from controller.kube.resources import NODES, PODS
from controller.metrics import REST_CLIENT_REQUESTS
from localcluster.procs import free_port


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class ApiServer:
    """Answers queued as (status, body bytes, chunks); records every request."""

    answers: list[tuple[int, list[bytes]]] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)

    def answer(self, status: int, body: Any = None, *, chunks: list[bytes] | None = None) -> None:
        self.answers.append((status, chunks if chunks is not None else [json.dumps(body or {}).encode()]))


def _handler(api: ApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            url = urlsplit(self.path)
            api.seen.append(
                Seen(self.command, url.path, parse_qs(url.query), dict(self.headers.items()),
                     json.loads(raw) if raw else None)
            )  # fmt: skip
            status, chunks = api.answers.pop(0) if api.answers else (500, [b"no answer queued"])
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(sum(len(c) for c in chunks)))
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(chunk)
                self.wfile.flush()

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def write_kubeconfig(directory: Path, server: str, user: dict[str, str]) -> Path:
    path = directory / "kubeconfig"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(json.dumps(config))
    return path


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[ApiServer, KubeClient]]:
    server_state = ApiServer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server_state))
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    kubeconfig = write_kubeconfig(tmp_path, f"http://127.0.0.1:{server.server_port}", {"token": "s3cret"})
    try:
        yield server_state, KubeClient(str(kubeconfig), timeout=5)
    finally:
        server.shutdown()
        server.server_close()


def test_reads_and_writes_go_to_the_resource_paths_with_the_token(api: tuple[ApiServer, KubeClient]) -> None:
    server, kube = api
    server.answer(200, {"metadata": {"resourceVersion": "42"}, "items": [{"metadata": {"name": "n1"}}]})
    server.answer(200, {"metadata": {"name": "p"}})
    server.answer(200, {"metadata": {"name": "n1"}})
    listed = kube.list(NODES)
    kube.get(PODS, "p", "ns")
    kube.patch(NODES, "n1", {"spec": {"unschedulable": True}}, subresource="status")
    assert (listed.resource_version, [o["metadata"]["name"] for o in listed.items]) == ("42", ["n1"])
    assert [(s.method, s.path) for s in server.seen] == [
        ("GET", "/api/v1/nodes"),
        ("GET", "/api/v1/namespaces/ns/pods/p"),
        ("PATCH", "/api/v1/nodes/n1/status"),
    ]
    assert server.seen[0].headers["Authorization"] == "Bearer s3cret"
    assert server.seen[2].headers["Content-Type"] == "application/merge-patch+json"
    assert server.seen[2].body == {"spec": {"unschedulable": True}}


def test_bind_and_evict_post_their_subresources(api: tuple[ApiServer, KubeClient]) -> None:
    server, kube = api
    server.answer(201, {})
    server.answer(201, {})
    kube.bind("ns", "p", "n1")
    kube.evict("ns", "p")
    bind, evict = server.seen
    assert (bind.path, bind.body["target"]) == (
        "/api/v1/namespaces/ns/pods/p/binding",
        {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    )
    assert (evict.path, evict.body["kind"], evict.body["apiVersion"]) == (
        "/api/v1/namespaces/ns/pods/p/eviction",
        "Eviction",
        "policy/v1",
    )


STATUSES = {
    "404 not found": (404, {"reason": "NotFound", "message": 'nodes "x" not found'}, NotFoundError),
    "409 already exists": (409, {"reason": "AlreadyExists", "message": "exists"}, AlreadyExistsError),
    "409 conflict": (409, {"reason": "Conflict", "message": "changed"}, ConflictError),
    "410 gone": (410, {"reason": "Expired", "message": "too old"}, GoneError),
    "429 a PDB says no": (429, {"reason": "TooManyRequests", "message": "pdb"}, TooManyRequestsError),
    "500 anything else": (500, {"message": "boom"}, KubeError),
}


@pytest.mark.parametrize(("status", "body", "error"), STATUSES.values(), ids=STATUSES.keys())
def test_each_status_is_a_typed_error_naming_the_request(
    api: tuple[ApiServer, KubeClient], status: int, body: dict[str, str], error: type[KubeError]
) -> None:
    server, kube = api
    server.answer(status, body)
    with pytest.raises(error) as caught:
        kube.get(NODES, "x")
    assert type(caught.value) is error
    assert caught.value.status == status
    assert str(caught.value) == f"GET /api/v1/nodes/x: {status} {body['message']}"


def test_a_non_json_error_body_is_quoted_not_raised(api: tuple[ApiServer, KubeClient]) -> None:
    server, kube = api
    server.answer(502, chunks=[b"<html>bad gateway</html>"])
    with pytest.raises(KubeError, match="502 <html>bad gateway</html>"):
        kube.delete(NODES, "x")


def test_watch_yields_events_split_across_chunks_and_asks_for_bookmarks(api: tuple[ApiServer, KubeClient]) -> None:
    server, kube = api
    lines: list[dict[str, Any]] = [
        {"type": "ADDED", "object": {"metadata": {"name": "a"}}},
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "7"}}},
        {"type": "DELETED", "object": {"metadata": {"name": "a"}}},
    ]
    stream = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    server.answer(200, chunks=[stream[:10], stream[10:55], stream[55:]])
    events = list(kube.watch(NODES, "5", timeout_seconds=3))
    assert events == [WatchEvent(e["type"], e["object"]) for e in lines]
    query = server.seen[0].query
    assert (query["watch"], query["resourceVersion"], query["allowWatchBookmarks"]) == (["true"], ["5"], ["true"])


def test_a_watch_error_event_410_means_relist(api: tuple[ApiServer, KubeClient]) -> None:
    server, kube = api
    expired = {"type": "ERROR", "object": {"code": 410, "reason": "Expired", "message": "too old resource version"}}
    server.answer(200, chunks=[json.dumps(expired).encode() + b"\n"])
    with pytest.raises(GoneError, match="too old resource version"):
        list(kube.watch(NODES, "1", timeout_seconds=3))


def test_an_unreachable_api_server_is_connection_lost(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path, f"http://127.0.0.1:{free_port()}", {})
    kube = KubeClient(str(kubeconfig), timeout=2)
    with pytest.raises(ConnectionLostError, match="GET /api/v1/nodes"):
        kube.list(NODES)


def test_every_request_is_counted_by_status_code_and_method(api: tuple[ApiServer, KubeClient]) -> None:
    def count(code: str, method: str) -> float:
        return float(REST_CLIENT_REQUESTS.labels(code, method)._value.get())

    server, client = api
    before = (count("200", "GET"), count("404", "GET"), count("201", "POST"))
    server.answer(200, {"metadata": {"resourceVersion": "1"}, "items": []})
    server.answer(404, {"kind": "Status", "reason": "NotFound", "code": 404})
    server.answer(201, {})
    client.list(NODES)
    with pytest.raises(NotFoundError):
        client.get(PODS, "gone", "default")
    client.bind("default", "p", "n1")
    after = (count("200", "GET"), count("404", "GET"), count("201", "POST"))
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 1, 1]


def test_a_list_page_asks_for_limit_and_continue_and_returns_the_next_token(api: tuple[ApiServer, KubeClient]) -> None:
    server, kube = api
    page = {"metadata": {"resourceVersion": "7", "continue": "tok-2"}, "items": [{"metadata": {"name": "a"}}]}
    server.answer(200, page)
    server.answer(200, {"metadata": {"resourceVersion": "7"}, "items": [{"metadata": {"name": "b"}}]})
    first = kube.list(PODS, limit=500)
    last = kube.list(PODS, limit=500, continue_token=first.continue_token)
    assert (first.continue_token, first.resource_version) == ("tok-2", "7")
    assert (last.continue_token, [o["metadata"]["name"] for o in last.items]) == ("", ["b"])
    assert [s.query for s in server.seen] == [{"limit": ["500"]}, {"limit": ["500"], "continue": ["tok-2"]}]


def test_an_expired_continue_token_is_gone(api: tuple[ApiServer, KubeClient]) -> None:
    server, kube = api
    server.answer(410, {"kind": "Status", "reason": "Expired", "message": "The provided continue parameter is too old"})
    with pytest.raises(GoneError, match="too old"):
        kube.list(PODS, limit=500, continue_token="stale")
