"""The controller's small HTTP server (stdlib, in a thread): health, metrics, decisions.

- `GET /healthz` — 200 `ok` while the process runs;
- `GET /readyz` — 200 once cluster state is synced, else 503;
- `GET /metrics` — Prometheus text (Karpenter's metric names, spec §9.1);
- `GET /api/v1/decisions?limit=N` — JSON list of recent decisions, newest first;
- `GET /api/v1/status` — JSON: identity, leader, synced;
- `GET /api/v1/nodes`, `GET /api/v1/pods/pending` — the dashboard's answers (`insight.py`):
  node prices and what would happen to each node, why each pending pod is pending.
Read-only; it never changes anything.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from controller.decisions import DecisionLog


class ControllerHTTPServer:
    def __init__(
        self,
        host: str,
        port: int,
        decisions: DecisionLog,
        status: Callable[[], dict[str, Any]],
        answers: Mapping[str, Callable[[], Any]] | None = None,
    ) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, code: int, body: bytes, content_type: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                try:
                    self._get()
                except Exception as err:  # a handler error is answered, never dropped
                    body = json.dumps({"error": f"unavailable: {type(err).__name__}"}).encode()
                    self._send(503, body, "application/json")

            def _not_allowed(self) -> None:
                self._send(405, b'{"error": "read-only: only GET is served"}', "application/json")

            do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _not_allowed

            def do_HEAD(self) -> None:
                self._send(405, b"", "application/json")

            def _get(self) -> None:
                url = urlparse(self.path)
                if url.path == "/healthz":
                    self._send(200, b"ok", "text/plain")
                elif url.path == "/readyz":
                    ready = bool(outer.status().get("synced"))
                    self._send(200 if ready else 503, b"ok" if ready else b"not synced", "text/plain")
                elif url.path == "/metrics":
                    self._send(200, generate_latest(), CONTENT_TYPE_LATEST)
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
                else:
                    self._send(404, b'{"error": "not found"}', "application/json")

        self.decisions = decisions
        self.status = status
        self.answers: Mapping[str, Callable[[], Any]] = answers or {}
        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="http", daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
