"""End to end: node termination through the finalizer (spec §7; issue 5)."""

from __future__ import annotations

import pytest

from controller.core import labels as L
from controller.kube.resources import NODES, PDBS, PODS
from tests.e2e.env import KarpyEnv
from tests.support.poll import until

pytestmark = pytest.mark.e2e


def one_node_with(karpy: KarpyEnv, app: str, replicas: int, **pod: object) -> str:
    karpy.provisioner()
    karpy.start()
    karpy.deployment(app, replicas, cpu="500m", memory="256Mi", **pod)
    until(lambda: len(karpy.running(app)) == replicas, 20, f"{replicas} {app} pods Running")
    (node,) = karpy.nodes()
    return str(node["metadata"]["name"])


def test_kubectl_delete_node_evicts_pods_terminates_instance_and_removes_finalizer(karpy: KarpyEnv) -> None:
    name = one_node_with(karpy, "web", 5)
    provider_id = karpy.kube.get(NODES, name)["spec"]["providerID"]
    old_pods = {p["metadata"]["name"] for p in karpy.running("web")}
    karpy.cluster.kubectl("delete", "node", name, "--wait=false")
    until(lambda: karpy.node_gone(name), 30, f"node {name} to be deleted")
    assert provider_id not in {i.provider_id for i in karpy.cloud.list()}
    assert all(p["metadata"]["name"] not in old_pods for p in karpy.pods("web"))
    assert karpy.events("Evicted")
    # the evicted pods' replacements get a new node
    until(lambda: len(karpy.running("web")) == 5, 30, "replacement pods Running on a new node")
    assert karpy.consistent() == ""


def test_pdb_with_max_unavailable_zero_blocks_eviction_and_the_node_waits(karpy: KarpyEnv) -> None:
    name = one_node_with(karpy, "guarded", 2)
    karpy.apply(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "guarded", "namespace": karpy.namespace},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "guarded"}}},
        }
    )
    until(
        lambda: karpy.kube.get(PDBS, "guarded", karpy.namespace).get("status", {}).get("expectedPods") == 2,
        20, "the disruption controller to compute the PDB's status",
    )  # fmt: skip
    karpy.cluster.kubectl("delete", "node", name, "--wait=false")
    until(
        lambda: [e for e in karpy.events("FailedDraining") if "PDB" in e["message"]], 20, "a FailedDraining PDB event"
    )
    karpy.passes("node.termination", 5)  # it keeps trying; the PDB keeps refusing
    node = karpy.kube.get(NODES, name)
    assert node["spec"].get("unschedulable") is True
    assert len(karpy.running("guarded")) == 2 and karpy.cloud.list()
    karpy.kube.delete(PDBS, "guarded", karpy.namespace)
    until(lambda: karpy.node_gone(name), 40, "the node to go once the PDB is removed")


def test_do_not_evict_pod_is_waited_for(karpy: KarpyEnv) -> None:
    name = one_node_with(karpy, "keep", 1, metadata={"annotations": {L.DO_NOT_EVICT: "true"}})
    (pod,) = karpy.running("keep")
    karpy.cluster.kubectl("delete", "node", name, "--wait=false")
    until(lambda: karpy.kube.get(NODES, name)["spec"].get("unschedulable"), 20, "the node cordoned for its drain")
    karpy.passes("node.termination", 5)  # drained but for the do-not-evict pod, which it waits for
    assert not karpy.node_gone(name)
    assert karpy.kube.get(PODS, pod["metadata"]["name"], karpy.namespace)["metadata"].get("deletionTimestamp") is None
    karpy.scale("keep", 0)  # the pod finishes on its own
    until(lambda: karpy.node_gone(name), 30, "the node to go once the do-not-evict pod is gone")
