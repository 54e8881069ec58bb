"""The local control plane itself: kwok nodes, the scheduler, workloads, the CLI, the tool versions.

These need no karpy webhook: they check that the cluster karpy is tested against behaves like a
real one (a Node karpy would create turns Ready, Deployments get pods, pods that fit nowhere are
marked Unschedulable by kube-scheduler).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localcluster import KWOK_NODE_SELECTOR, LocalCluster
from localcluster.procs import alive
from localcluster.state import load
from tests.e2e.env import Kube
from tests.support.poll import until

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
NODE = "kwok-e2e-node"
PINS = dict(
    line.split("=", 1)
    for line in (REPO / "localcluster" / "versions.env").read_text().splitlines()
    if "=" in line and not line.startswith("#")
)
KUBE_VERSION = PINS["KUBE_VERSION"]


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == kind), {})


def kwok_node(name: str, cpu: str = "4", memory: str = "16Gi") -> dict[str, Any]:
    """A Node as karpy's kwok-backed provider creates it: selector label, capacity set at create."""
    key, value = KWOK_NODE_SELECTOR.split("=")
    resources = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {key: value, "kubernetes.io/hostname": name}},
        "status": {"capacity": resources, "allocatable": resources},
    }


@pytest.fixture(scope="module")
def namespace(kube: Kube) -> Iterator[str]:
    kube.run("create", "namespace", "e2e-cluster", check=True)
    # Pods need the namespace's default ServiceAccount, which the controller manager creates.
    until(
        lambda: kube.run("get", "serviceaccount", "default", "-n", "e2e-cluster").returncode == 0,
        30,
        "the default ServiceAccount in e2e-cluster",
    )
    yield "e2e-cluster"
    kube.delete("namespace", "e2e-cluster")


@pytest.fixture(scope="module")
def ready_node(kube: Kube) -> Iterator[dict[str, Any]]:
    kube.run("create", "-f", "-", input=json.dumps(kwok_node(NODE)), check=True)

    def ready() -> dict[str, Any] | None:
        node: dict[str, Any] = kube.get("node", NODE)
        return node if condition(node, "Ready").get("status") == "True" else None

    yield until(ready, 60, f"node {NODE} to turn Ready")
    kube.delete("node", NODE)


def test_a_kwok_node_created_through_the_api_turns_ready(ready_node: dict[str, Any]) -> None:
    assert condition(ready_node, "Ready")["status"] == "True"
    assert ready_node["status"]["allocatable"]["cpu"] == "4"  # kwok kept the capacity set at create


def test_a_deployment_of_three_gets_its_pods_running_on_the_kwok_node(
    kube: Kube, namespace: str, ready_node: dict[str, Any]
) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "inflate", "namespace": namespace},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "inflate"}},
            "template": {
                "metadata": {"labels": {"app": "inflate"}},
                "spec": {
                    "containers": [
                        {
                            "name": "pause",
                            "image": "registry.k8s.io/pause:3.9",
                            "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}},
                        }
                    ]
                },
            },
        },
    }
    assert kube.apply(deployment).returncode == 0

    def running_pods() -> list[dict[str, Any]] | None:
        pods: list[dict[str, Any]] = kube.get("pods", "-n", namespace, "-l", "app=inflate")["items"]
        running = [p for p in pods if p["status"].get("phase") == "Running"]
        return running if len(running) == 3 else None

    pods = until(running_pods, 90, "3 inflate pods Running")
    assert {p["spec"]["nodeName"] for p in pods} == {NODE}
    assert all(condition(p, "Ready")["status"] == "True" for p in pods)
    assert all(p["status"].get("podIP", "").startswith("10.244.") for p in pods)


def test_a_pod_that_fits_no_node_is_marked_unschedulable_by_the_scheduler(
    kube: Kube, namespace: str, ready_node: dict[str, Any]
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "too-big", "namespace": namespace},
        "spec": {
            "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": {"cpu": "64"}}}
            ]
        },
    }
    assert kube.apply(pod).returncode == 0

    def unschedulable() -> dict[str, Any] | None:
        cond = condition(kube.get("pod", "too-big", "-n", namespace), "PodScheduled")
        return cond if cond.get("status") == "False" else None

    cond = until(unschedulable, 60, "PodScheduled=False on too-big")
    assert cond["reason"] == "Unschedulable"
    assert "Insufficient cpu" in cond["message"]


def test_karpys_crds_are_installed_cluster_scoped_with_a_status_subresource(kube: Kube) -> None:
    expected = {"provisioners.karpenter.sh": "v1alpha5", "awsnodetemplates.karpenter.k8s.aws": "v1alpha1"}
    for name, version in expected.items():
        crd = kube.get("crd", name)
        assert crd["spec"]["scope"] == "Cluster"
        (served,) = crd["spec"]["versions"]
        assert served["name"] == version and served["storage"] is True
        assert served["subresources"] == {"status": {}}
        assert condition(crd, "Established")["status"] == "True"


def test_the_apiserver_reports_the_pinned_kubernetes_version(kube: Kube) -> None:
    versions = json.loads(kube.run("version", "-o", "json", check=True).stdout)
    assert versions["serverVersion"]["gitVersion"] == f"v{KUBE_VERSION}"
    assert versions["clientVersion"]["gitVersion"] == f"v{KUBE_VERSION}"


@pytest.mark.parametrize(
    ("binary", "args", "expected"),
    [
        ("kubectl", ["version", "--client"], f"Client Version: v{KUBE_VERSION}"),
        ("helm", ["version"], f'Version:"v{PINS["HELM_VERSION"]}"'),
        ("kube-apiserver", ["--version"], f"Kubernetes v{KUBE_VERSION}"),
        ("kube-controller-manager", ["--version"], f"Kubernetes v{KUBE_VERSION}"),
        ("kube-scheduler", ["--version"], f"Kubernetes v{KUBE_VERSION}"),
        ("etcd", ["--version"], f"etcd Version: {PINS['ETCD_VERSION']}"),
        ("kwok", ["--version"], f"kwok version v{PINS['KWOK_VERSION']}"),
    ],
)
def test_cached_tools_print_real_versions(
    local_cluster: LocalCluster, binary: str, args: list[str], expected: str
) -> None:
    out = subprocess.run([str(local_cluster.bin_dir / binary), *args], capture_output=True, text=True, check=True)
    assert expected in out.stdout + out.stderr
    assert "v0.0.0" not in out.stdout and "$Format" not in out.stdout


def test_cluster_cli_up_status_down_from_separate_processes(tmp_path: Path) -> None:
    """`karpy cluster up` returns with the cluster running; `down` in another process stops it all."""

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "karpy", "cluster", *args, "--dir", str(tmp_path)],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
        )

    up = cli("up")
    assert up.returncode == 0, up.stderr
    assert up.stdout.strip() == str(tmp_path / "kubeconfig")
    state = load(tmp_path)
    assert state is not None
    try:
        assert {p.name for p in state.procs} == {
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kwok",
        }
        status = cli("status")
        assert status.returncode == 0, status.stdout + status.stderr
        assert "ready" in status.stdout
        nodes = subprocess.run(
            [str(Path(state.bin_dir) / "kubectl"), "--kubeconfig", state.kubeconfig, "get", "namespaces", "-o", "name"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert "namespace/default" in nodes.stdout
    finally:
        down = cli("down")
    assert down.returncode == 0, down.stderr
    assert not any(alive(p) for p in state.procs)
    assert load(tmp_path) is None
    assert not os.path.exists(state.etcd_data_dir)
    assert cli("status").returncode == 1
