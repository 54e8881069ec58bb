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

from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster import LocalCluster
from tests.e2e.env import KarpyEnv, Kube, WebhookServer, karpy_env, webhook_server_on


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


@pytest.fixture(scope="session")
def webhook_server(local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookServer]:
    with webhook_server_on(local_cluster, tmp_path_factory.mktemp("webhook")) as server:
        yield server


@pytest.fixture
def karpy(local_cluster: LocalCluster, tmp_path: Path) -> Iterator[KarpyEnv]:
    with karpy_env(local_cluster, tmp_path) as env:
        yield env
