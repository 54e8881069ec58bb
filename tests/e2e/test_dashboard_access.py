"""The dashboard behind Kubernetes' own authorization, on the real API server (issue 20, defect 7).

`karpy webapp --dashboard-port P --dashboard-auth kubernetes` with the local cluster's kubeconfig:
a ServiceAccount token bound to a ClusterRole allowing `get` on `dashboard` in `karpy.sh` reads
the dashboard; another account's token is refused (403), a forged one too (401); the webhook port
serves no page. TokenReview and SubjectAccessReview are the API server's own.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from localcluster import LocalCluster, probes, procs
from tests.e2e.env import REPO

pytestmark = pytest.mark.e2e

NS = "default"
VIEWER, OTHER = "karpy-e2e-dashboard-viewer", "karpy-e2e-dashboard-other"


@dataclass
class Served:
    webhooks: str
    dashboard: str
    context: ssl.SSLContext


def manifests() -> list[dict[str, object]]:
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": VIEWER, "namespace": NS}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": OTHER, "namespace": NS}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": VIEWER},
         "rules": [{"apiGroups": ["karpy.sh"], "resources": ["dashboard"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": VIEWER},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": VIEWER},
         "subjects": [{"kind": "ServiceAccount", "name": VIEWER, "namespace": NS}]},
    ]  # fmt: skip


@pytest.fixture(scope="module")
def served(local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("dashboard-access")
    local_cluster.kubectl(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": manifests()})
    )
    certs = tmp / "certs"
    karpy = [sys.executable, "-m", "karpy"]
    subprocess.run([*karpy, "certs", "generate", "--dir", str(certs), "--host", "127.0.0.1"], check=True, cwd=REPO)
    port, dashboard = procs.free_port(), procs.free_port()
    argv = [*karpy, "webapp", "--cert-dir", str(certs), "--host", "127.0.0.1", "--port", str(port),
            "--dashboard-port", str(dashboard), "--dashboard-auth", "kubernetes", "--workers", "1",
            "--kubeconfig", str(local_cluster.kubeconfig)]  # fmt: skip
    proc = procs.start("webapp-dashboard-access", argv, tmp, die_with_parent=True, cwd=REPO)
    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    try:
        procs.wait_until("webapp", lambda: probes.ok(f"https://127.0.0.1:{dashboard}/healthz", context), 60, [proc])
        yield Served(f"https://127.0.0.1:{port}", f"https://127.0.0.1:{dashboard}", context)
    finally:
        procs.stop(proc)
        for doc in manifests():
            kind, name = str(doc["kind"]).lower(), doc["metadata"]["name"]  # type: ignore[index]
            local_cluster.kubectl("delete", "--ignore-not-found", kind, str(name), "-n", NS)


def status(served: Served, url: str, token: str = "") -> int:
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10, context=served.context) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return err.code


def token(cluster: LocalCluster, account: str) -> str:
    return cluster.kubectl("create", "token", account, "-n", NS, "--duration=1h").stdout.strip()


def test_only_an_account_kubernetes_authorizes_reads_the_dashboard(local_cluster: LocalCluster, served: Served) -> None:
    viewer, other = token(local_cluster, VIEWER), token(local_cluster, OTHER)
    assert status(served, f"{served.dashboard}/api/v1/nodes") == 401
    assert status(served, f"{served.dashboard}/api/v1/nodes", "not-a-token") == 401
    assert status(served, f"{served.dashboard}/api/v1/nodes", other) == 403
    assert status(served, f"{served.dashboard}/api/v1/nodes", viewer) == 200
    assert status(served, f"{served.dashboard}/", viewer) == 200
    assert status(served, f"{served.webhooks}/api/v1/nodes", viewer) == 404  # no page on the webhook port
    assert status(served, f"{served.webhooks}/healthz") == 200
