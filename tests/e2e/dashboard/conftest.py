"""Fixtures for the dashboard's browser tests: the controller (simulated cloud) and `karpy webapp`
on the session's local control plane, and headless Chromium driven by Playwright.

Chromium is Debian's `/usr/bin/chromium` (installed by `make test`); Playwright never downloads a
browser here.
"""

from __future__ import annotations

import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from localcluster import procs
from tests.e2e.env import REPO, Controller, KarpyEnv

CHROMIUM = "/usr/bin/chromium"


@dataclass
class Dashboard:
    url: str
    proc: procs.Proc
    controller: Controller

    def api(self, path: str) -> Any:
        import json

        with urllib.request.urlopen(f"{self.url}{path}", timeout=10) as resp:
            return json.loads(resp.read())


def _healthy(url: str) -> bool:
    with urllib.request.urlopen(f"{url}/healthz", timeout=2) as resp:
        return bool(resp.status == 200)


@pytest.fixture
def dashboard(karpy: KarpyEnv) -> Iterator[tuple[KarpyEnv, Dashboard]]:
    ctrl = karpy.start()
    port = procs.free_port()
    argv = [
        sys.executable, "-m", "karpy", "webapp",
        "--kubeconfig", str(karpy.cluster.kubeconfig),
        "--controller-url", f"http://127.0.0.1:{ctrl.port}",
        "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
    ]  # fmt: skip
    proc = procs.start("webapp", argv, karpy.tmp, die_with_parent=True, cwd=REPO)
    url = f"http://127.0.0.1:{port}"
    try:
        procs.wait_until("webapp healthy", lambda: _healthy(url), 30, [proc])
        yield karpy, Dashboard(url, proc, ctrl)
    finally:
        procs.stop(proc, grace_seconds=5)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            yield chromium
        finally:
            chromium.close()
