"""Session fixtures for the end-to-end tests: a real control plane and karpy's webhook server.

`local_cluster` starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
(building the binaries first if the cache lacks them; these tests are never skipped for want of
binaries). `webhook_server` runs `karpy webapp` over TLS and registers its webhooks with the
apiserver, so `kubectl apply` travels apiserver -> karpy -> apiserver as it does for a user.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localcluster import LocalCluster, probes, procs

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class WebhookServer:
    url_base: str
    ca_crt: Path
    proc: procs.Proc


class Kube:
    """A thin kubectl helper over one `LocalCluster`."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster

    @property
    def kubeconfig(self) -> Path:
        return self.cluster.kubeconfig

    def run(self, *args: str, input: str | None = None, check: bool = False) -> subprocess.CompletedProcess[str]:
        return self.cluster.kubectl(*args, input=input, check=check)

    def apply(self, manifest: str | dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
        text = manifest if isinstance(manifest, str) else json.dumps(manifest)
        return self.run("apply", *args, "-f", "-", input=text)

    def get(self, *args: str) -> Any:
        return json.loads(self.cluster.kubectl("get", *args, "-o", "json").stdout)

    def delete(self, *args: str) -> None:
        self.cluster.kubectl("delete", "--ignore-not-found", "--wait=false", *args)


def eventually(check: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
    """Poll `check` until it returns something truthy; fail the test with `what` otherwise."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}; last value: {last!r}")


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("cluster"))
    cluster.up()
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="session")
def kube(local_cluster: LocalCluster) -> Kube:
    return Kube(local_cluster)


def _karpy(*args: str) -> list[str]:
    return [sys.executable, "-m", "karpy", *args]


@pytest.fixture(scope="session")
def webhook_server(local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookServer]:
    tmp = tmp_path_factory.mktemp("webhook")
    certs = tmp / "certs"
    subprocess.run(
        _karpy("certs", "generate", "--dir", str(certs), "--host", "127.0.0.1", "--host", "localhost"),
        check=True,
        capture_output=True,
        cwd=REPO,
    )
    ca_crt = certs / "ca.crt"
    port = procs.free_port()
    url_base = f"https://127.0.0.1:{port}"
    proc = procs.start(
        "karpy-webapp",
        _karpy("webapp", "--cert-dir", str(certs), "--port", str(port), "--host", "127.0.0.1"),
        tmp,
        die_with_parent=True,
        cwd=REPO,
    )
    try:
        ctx = ssl.create_default_context(cafile=str(ca_crt))
        procs.wait_until("karpy webapp /healthz", lambda: probes.ok(url_base + "/healthz", ctx), 60, [proc])
        local_cluster.install_webhooks(url_base, ca_crt.read_bytes())
        yield WebhookServer(url_base=url_base, ca_crt=ca_crt, proc=proc)
    finally:
        try:
            local_cluster.uninstall_webhooks()
        finally:
            procs.stop(proc)
