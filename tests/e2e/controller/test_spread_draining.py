"""End to end: a zonal spread counts the pods still on a draining node, as kube-scheduler does (issue 21).

kube-scheduler's PodTopologySpread counts the matching pods of every node the pod may go to —
cordoned and deleting nodes included — skipping only pods already being deleted. A node whose
drain is held (here by `karpenter.sh/do-not-evict` pods) keeps its pods counted in its zone for
as long as the drain lasts. The cluster, one instance type (m5.large, 1930m allocatable):
- zone a: node A1 with two `tier: web` pods that must not be evicted, then deleted (its drain
  waits for them); node A2 with 1680m free;
- zones b and c: one node each, full but for 430m, one `tier: web` pod each.
A new pod (500m) spread over zones by `tier: web` (maxSkew 1, DoNotSchedule): kube-scheduler counts
a = 2, b = 1, c = 1, so zone a is refused (skew 2) and b and c have no room — it needs a new node
in b or c. karpy used to leave the draining node's pods out of its count (they were to be
rescheduled), saw room for it on A2 and launched nothing: the pod stayed pending for as long as
the drain lasted.
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.core import labels as L
from controller.kube.resources import NODES
from tests.e2e.env import Controller, KarpyEnv
from tests.support.poll import until

pytestmark = pytest.mark.e2e

ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")
TIER = {"tier": "web"}
SPREAD = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": L.ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": TIER},
        }
    ]
}


def in_zone(karpy: KarpyEnv, app: str, replicas: int, cpu: str, zone: str, **pod: Any) -> None:
    labels = {"app": app, **pod.pop("labels", {})}
    meta = {"labels": labels, **pod.pop("metadata", {})}
    karpy.deployment(app, replicas, cpu=cpu, memory="128Mi", metadata=meta, nodeSelector={L.ZONE: zone}, **pod)


def node_of(karpy: KarpyEnv, app: str) -> str:
    (name,) = {str(p["spec"]["nodeName"]) for p in karpy.running(app)}
    return name


def why_pending(karpy: KarpyEnv, ctrl: Controller, app: str) -> str:
    """kube-scheduler's last word on the app's pending pods and karpy's evaluation of them."""
    evaluations = ctrl.get("/api/v1/pods/pending")["pods"]
    out = []
    for pod in karpy.pods(app):
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        conditions = [c for c in pod.get("status", {}).get("conditions", []) if c.get("type") == "PodScheduled"]
        scheduler = conditions[0].get("message", "") if conditions else "no PodScheduled condition"
        karpy_says = evaluations.get(key, {})
        out.append(
            f"{key}: kube-scheduler: {scheduler!r}; karpy: {karpy_says.get('action')} {karpy_says.get('reason')!r}"
        )
    return "; ".join(out)


def test_a_spread_pod_kube_scheduler_refuses_beside_a_held_drain_gets_a_node(karpy: KarpyEnv) -> None:
    karpy.provisioner(
        requirements=[
            {"key": L.INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]},
            {"key": L.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},
            {"key": L.ZONE, "operator": "In", "values": list(ZONES)},
        ]
    )
    ctrl = karpy.start("replica-a", "--batch-idle-seconds", "0.5", "--batch-max-seconds", "2")
    keep = {"annotations": {L.DO_NOT_EVICT: "true"}}
    in_zone(karpy, "held", 2, "250m", ZONES[0], labels=TIER, metadata=keep)
    in_zone(karpy, "full-b", 1, "1500m", ZONES[1], labels=TIER)
    in_zone(karpy, "full-c", 1, "1500m", ZONES[2], labels=TIER)
    for app, count in (("held", 2), ("full-b", 1), ("full-c", 1)):
        until(lambda app=app, count=count: len(karpy.running(app)) == count, 60, f"{app} Running")  # type: ignore[misc]
    draining = node_of(karpy, "held")
    karpy.cluster.kubectl("cordon", draining)  # so the next pod gets a node of its own in zone a
    in_zone(karpy, "room-a", 1, "250m", ZONES[0])
    until(lambda: len(karpy.running("room-a")) == 1, 60, "room-a Running on a second node in zone a")
    assert node_of(karpy, "room-a") != draining
    nodes_before = {n["metadata"]["name"] for n in karpy.nodes()}
    karpy.cluster.kubectl("delete", "node", draining, "--wait=false")
    until(lambda: karpy.kube.get(NODES, draining)["spec"].get("unschedulable"), 30, "the drain under way")
    karpy.passes("node.termination", 3)  # the drain waits for the do-not-evict pods
    assert len(karpy.running("held")) == 2

    karpy.deployment("web", 1, cpu="500m", memory="128Mi", metadata={"labels": {"app": "web", **TIER}}, **SPREAD)

    try:
        until(lambda: len(karpy.running("web")) == 1, 60, "the spread pod Running")
    except pytest.fail.Exception:
        pytest.fail(f"the spread pod is still pending: {why_pending(karpy, ctrl, 'web')}")
    (web,) = karpy.running("web")
    node = karpy.kube.get(NODES, web["spec"]["nodeName"])
    assert node["metadata"]["name"] not in nodes_before  # a node launched for it
    assert node["metadata"]["labels"][L.ZONE] in ZONES[1:]  # where kube-scheduler's count allows it
    assert not karpy.node_gone(draining)  # the drain still waits for its pods
