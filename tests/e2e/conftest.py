"""Fixtures for every end-to-end test: a real control plane, karpy's webhook server, and a
karpy environment per test (`tests/e2e/env.py` holds what they give).

`local_cluster` starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
(building the binaries first if the cache lacks them; these tests are never skipped for want of
binaries). `webhook_server` runs `karpy webapp` over TLS and registers its webhooks with the
apiserver, so `kubectl apply` travels apiserver -> karpy -> apiserver as it does for a user.
`karpy` gives a `KarpyEnv` on the session's cluster: a fresh namespace and simulated cloud, and
`karpy controller` processes to start.
"""

from __future__ import annotations

import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster import LocalCluster, probes, procs
from tests.e2e.env import REPO, KarpyEnv, Kube, WebhookServer, karpy_env


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


@pytest.fixture
def karpy(local_cluster: LocalCluster, tmp_path: Path) -> Iterator[KarpyEnv]:
    with karpy_env(local_cluster, tmp_path) as env:
        yield env
