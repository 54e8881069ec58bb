"""The controller's small HTTP server (stdlib, in a thread): health, metrics, decisions.

- `GET /healthz` — 200 `ok` while the process runs;
- `GET /readyz` — 200 once cluster state is synced (and, on the leader, the cloud answers),
  else 503 with the reason (`status()["notReady"]`);
- `GET /metrics` — Prometheus text (Karpenter's metric names and types, spec §9.1; `exposition.py`),
  gzipped when Accept-Encoding asks, one body for the scrapes that arrive together (`scrape.py`);
- `GET /api/v1/decisions?limit=N` — JSON list of recent decisions, newest first;
- `GET /api/v1/status` — JSON: identity, leader, synced;
- `GET /api/v1/nodes`, `GET /api/v1/pods/pending` — the dashboard's answers (`insight.py`):
  node prices and what would happen to each node, why each pending pod is pending;
- `GET /api/v1/savings` — what consolidation saved (`explain/savings.py`) and the opportunity
  blocked nodes hold;
- `GET /api/v1/explain/nodes/NAME`, `GET /api/v1/explain/pods/NS/NAME` and
  `POST /api/v1/what-if` (a manifest of at most `MAX_BODY` bytes) — the explain answers
  (`explain/service.py`); the what-if POST only computes.
Read-only; it never changes anything: every other POST, and every PUT, PATCH, DELETE, answers 405.

While the controller is not configured (`configwait.py`), `unavailable()` names why: every
`/api/` path answers 503 `{"error": "not configured: …"}` (after the token check), `/healthz`
still 200 and `/readyz` 503 with the same text; `serve()` then swaps in the controller's answers
on the same port.

Slow clients cannot pile up (issue 14, item 4): a connection has `HTTPLimits.deadline` seconds
for its whole exchange (socket timeout and a reaper that shuts it down), and at most
`max_connections` are open at once — a new one pushes out the oldest, so a probe always gets in.
However many clients scrape `/metrics` at once, one body is written at a time (`scrape.Scrapes`),
and a scrape that waited half its deadline for another's writing is answered 503.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from controller.decisions import DecisionLog
from controller.exposition import CONTENT_TYPE, exposition
from controller.kube.access import UNAUTHENTICATED, Verdict, bearer
from controller.scrape import Scrapes, gzip_accepted

log = logging.getLogger(__name__)

MAX_BODY = 1 << 20  # a what-if manifest larger than 1 MiB is refused (413)
Routed = Callable[[str], tuple[int, Any]]  # the rest of the path → (status, JSON)
Posted = Callable[[str], tuple[int, Any]]  # the body as text → (status, JSON)


@dataclass(frozen=True)
class HTTPLimits:
    deadline: float = 10.0  # seconds a connection may stay open
    max_connections: int = 64


class _GuardedServer(ThreadingHTTPServer):
    """A thread per connection, each under a deadline, and a bounded number of them."""

    daemon_threads = True
    request_queue_size = 128  # a burst of connections waits for accept() instead of SYN retries

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], limits: HTTPLimits) -> None:
        self.limits = limits
        self._open: dict[socket.socket, float] = {}
        self._open_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        now = time.monotonic()
        with self._open_lock:
            late = [s for s, started in self._open.items() if now - started > self.limits.deadline]
            if len(self._open) - len(late) >= self.limits.max_connections:
                late.append(min(self._open, key=self._open.__getitem__))
            self._open[request] = now
        _cut(late)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.pop(request, None)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (or was cut) is not an error worth a traceback."""
        log.debug("http client %s: connection ended early", client_address)

    def service_actions(self) -> None:  # serve_forever calls it every poll interval
        now = time.monotonic()
        with self._open_lock:
            late = [s for s, started in self._open.items() if now - started > self.limits.deadline]
        _cut(late)


def _cut(sockets: list[socket.socket]) -> None:
    """End connections: their handler threads see end-of-file and finish."""
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _route(prefixes: Mapping[str, Routed], path: str) -> tuple[Routed, str] | None:
    """The handler whose prefix `path` starts with, and the (URL-decoded) rest of the path."""
    for prefix, handler in prefixes.items():
        if path.startswith(prefix) and len(path) > len(prefix):
            return handler, unquote(path[len(prefix) :])
    return None


class ControllerHTTPServer:
    def __init__(
        self,
        host: str,
        port: int,
        decisions: DecisionLog,
        status: Callable[[], dict[str, Any]],
        answers: Mapping[str, Callable[[], Any]] | None = None,
        limits: HTTPLimits | None = None,
        *,
        prefixes: Mapping[str, Routed] | None = None,
        posts: Mapping[str, Posted] | None = None,
        access: Callable[[str], Verdict] | None = None,
        unavailable: Callable[[], str] | None = None,
        metrics: Callable[[], bytes] = exposition,
    ) -> None:
        outer = self
        bounds = limits or HTTPLimits()
        # a scrape waits for another's writing half its deadline, leaving the rest to answer
        scrapes = self.scrapes = Scrapes(metrics, wait=bounds.deadline / 2)

        class Handler(BaseHTTPRequestHandler):
            timeout = bounds.deadline

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, code: int, body: bytes, content_type: str, extra: Mapping[str, str] | None = None) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                for name, value in (extra or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _refused(self) -> bool:
                """True when an /api/ call lacks a token Kubernetes authorizes (answered here)."""
                if access is None or not urlparse(self.path).path.startswith("/api/"):
                    return False
                token = bearer(self.headers.get("Authorization"))
                verdict = access(token) if token else UNAUTHENTICATED
                if verdict.allowed:
                    return False
                self._send(verdict.status, json.dumps({"error": verdict.reason}).encode(), "application/json")
                return True

            def do_GET(self) -> None:
                try:
                    if self._refused() or self._unconfigured():
                        return
                    self._get()
                except Exception as err:  # a handler error is answered, never dropped
                    body = json.dumps({"error": f"unavailable: {type(err).__name__}"}).encode()
                    self._send(503, body, "application/json")

            def _why_unconfigured(self) -> str:
                """Why this /api/ call cannot be answered: the controller is not configured ("" else)."""
                if outer.unavailable is None or not urlparse(self.path).path.startswith("/api/"):
                    return ""
                return outer.unavailable()

            def _unconfigured(self) -> bool:
                """True when an /api/ call meets a controller that is not configured (answered here)."""
                why = self._why_unconfigured()
                if not why:
                    return False
                self._send(503, json.dumps({"error": why}).encode(), "application/json")
                return True

            def _not_allowed(self) -> None:
                self._send(405, b'{"error": "read-only: only GET is served"}', "application/json")

            do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _not_allowed

            def do_POST(self) -> None:
                handler = outer.posts.get(urlparse(self.path).path)
                if handler is None and not self._why_unconfigured():
                    self._not_allowed()
                    return
                if self._refused() or self._unconfigured() or handler is None:
                    return
                try:
                    length = int(self.headers.get("Content-Length") or "")
                except ValueError:
                    self._send(411, b'{"error": "a Content-Length is required"}', "application/json")
                    return
                if not 0 <= length <= MAX_BODY:
                    self._send(413, json.dumps({"error": f"the body must be at most {MAX_BODY} bytes"}).encode(),
                               "application/json")  # fmt: skip
                    return
                try:
                    text = self.rfile.read(length).decode("utf-8")
                except UnicodeDecodeError:
                    self._send(400, b'{"error": "the body is not UTF-8 text"}', "application/json")
                    return
                self._answer(lambda: handler(text))

            def _answer(self, compute: Callable[[], tuple[int, Any]]) -> None:
                try:
                    code, body = compute()
                except Exception as err:  # a handler error is answered, never dropped
                    log.exception("answering %s", self.path)
                    code, body = 503, {"error": f"unavailable: {type(err).__name__}"}
                self._send(code, json.dumps(body).encode(), "application/json")

            def do_HEAD(self) -> None:
                self._send(405, b"", "application/json")

            def _get(self) -> None:
                url = urlparse(self.path)
                if url.path == "/healthz":
                    self._send(200, b"ok", "text/plain")
                elif url.path == "/readyz":
                    status = outer.status()
                    why = str(status.get("notReady", "" if status.get("synced") else "not synced"))
                    self._send(503 if why else 200, why.encode()[:2048] if why else b"ok", "text/plain")
                elif url.path == "/metrics":
                    gzipped = gzip_accepted(self.headers.get("Accept-Encoding"))
                    payload = scrapes.get().body(gzipped)
                    encoding = {"Content-Encoding": "gzip"} if gzipped else {}
                    self._send(200, payload, CONTENT_TYPE, {**encoding, "Vary": "Accept-Encoding"})
                elif url.path == "/api/v1/decisions":
                    try:
                        limit = int(parse_qs(url.query).get("limit", ["200"])[0])
                        if not 1 <= limit <= 10_000:
                            raise ValueError(limit)
                    except ValueError:
                        self._send(400, b'{"error": "limit must be an integer from 1 to 10000"}', "application/json")
                        return
                    body = json.dumps([d.to_json() for d in outer.decisions.recent(limit)])
                    self._send(200, body.encode(), "application/json")
                elif url.path == "/api/v1/status":
                    self._send(200, json.dumps(outer.status()).encode(), "application/json")
                elif url.path in outer.answers:
                    self._send(200, json.dumps(outer.answers[url.path]()).encode(), "application/json")
                elif (routed := _route(outer.prefixes, url.path)) is not None:
                    handler, rest = routed
                    self._answer(lambda: handler(rest))
                else:
                    self._send(404, b'{"error": "not found"}', "application/json")

        self.serve(decisions, status, answers, prefixes=prefixes, posts=posts, unavailable=unavailable)
        self.server = _GuardedServer((host, port), Handler, bounds)
        self.thread = threading.Thread(target=self.server.serve_forever, name="http", daemon=True)

    def serve(
        self,
        decisions: DecisionLog,
        status: Callable[[], dict[str, Any]],
        answers: Mapping[str, Callable[[], Any]] | None = None,
        *,
        prefixes: Mapping[str, Routed] | None = None,
        posts: Mapping[str, Posted] | None = None,
        unavailable: Callable[[], str] | None = None,
    ) -> None:
        """What the server answers from now on (`main.run` swaps the not-configured answers for the
        controller's once it starts, on the same port)."""
        self.decisions = decisions
        self.status = status
        self.answers: Mapping[str, Callable[[], Any]] = answers or {}
        self.prefixes: Mapping[str, Routed] = prefixes or {}
        self.posts: Mapping[str, Posted] = posts or {}
        self.unavailable = unavailable

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
