"""`KubeClient` credentials and redirects, against a tiny local API server on 127.0.0.1 (issue 14, item 6)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.kube.client import KubeClient
from controller.kube.errors import KubeError
from controller.kube.resources import NODES


class FakeAPIServer:
    """Answers GET /api/v1/nodes/<name> for one accepted bearer token; records what it saw."""

    def __init__(self) -> None:
        self.token = "first"
        self.redirect_to = ""
        self.seen: list[tuple[str, str]] = []  # (path, Authorization)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                auth = self.headers.get("Authorization", "")
                outer.seen.append((self.path, auth))
                if outer.redirect_to:
                    self.send_response(302)
                    self.send_header("Location", outer.redirect_to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                ok = auth.lower() == f"bearer {outer.token}"
                body = json.dumps(
                    {"kind": "Node", "metadata": {"name": "n1"}}
                    if ok
                    else {"kind": "Status", "reason": "Unauthorized", "message": "Unauthorized"}
                ).encode()
                self.send_response(200 if ok else 401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def apiserver() -> Iterator[FakeAPIServer]:
    server = FakeAPIServer()
    yield server
    server.close()


@pytest.fixture
def other() -> Iterator[FakeAPIServer]:
    server = FakeAPIServer()
    yield server
    server.close()


def kubeconfig(tmp_path: Path, server: str, token_file: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"tokenFile": str(token_file)}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return path


def test_a_rotated_token_is_read_again(apiserver: FakeAPIServer, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first")
    client = KubeClient(str(kubeconfig(tmp_path, apiserver.url, token)))
    assert client.get(NODES, "n1")["metadata"]["name"] == "n1"
    token.write_text("second")  # the kubelet rotates projected service-account tokens
    apiserver.token = "second"  # and the old one stops being accepted
    assert client.get(NODES, "n1")["metadata"]["name"] == "n1"
    assert apiserver.seen[-1][1].lower() == "bearer second"


def test_redirects_are_not_followed(apiserver: FakeAPIServer, other: FakeAPIServer, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first")
    client = KubeClient(str(kubeconfig(tmp_path, apiserver.url, token)))
    apiserver.redirect_to = other.url
    with pytest.raises(KubeError, match="302"):
        client.get(NODES, "n1")
    assert other.seen == []  # neither the request nor the token went elsewhere
