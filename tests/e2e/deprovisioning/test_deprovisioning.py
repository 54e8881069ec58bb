"""End to end: deprovisioning on the real local control plane (spec §6; issue 5).

A real `karpy controller` on the simulated cloud, with deprovisioning's timings shortened
(`FAST`): scale to zero with `ttlSecondsAfterEmpty`, consolidation of a halved Deployment
(fewer or cheaper nodes), a half-empty node repacked onto two cheaper ones (karpy's repack
consolidation), a `do-not-evict` pod and a `maxUnavailable: 0` PDB that keep their node out of
consolidation and expiry, and expiry replacing a node after its TTL. The
termination side of PDBs and `do-not-evict` (a node deleted by hand waits) is covered in
`tests/e2e/controller/test_termination.py`.
"""

from __future__ import annotations

import functools
import time
from datetime import datetime
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from controller.cloudprovider.base import NodeRequest
from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.core import labels as L
from controller.core.requirements import Requirements
from controller.core.resources import parse_resources
from controller.kube.resources import NODES, PDBS, PODS, PROVISIONERS
from tests.e2e.env import FAST, Controller, KarpyEnv
from tests.support.poll import until

pytestmark = pytest.mark.e2e


# helpers -------------------------------------------------------------------------------------


@functools.cache
def _prices() -> dict[tuple[str, str, str], float]:
    return {(it.name, o.zone, o.capacity_type): o.price for it in simulated_catalog() for o in it.offerings}


def node_price(node: dict[str, Any]) -> float:
    """A node's hourly price from its labels and the simulated catalog."""
    labels = node["metadata"]["labels"]
    return _prices()[(labels[L.INSTANCE_TYPE], labels[L.ZONE], labels[L.CAPACITY_TYPE])]


def fleet(karpy: KarpyEnv) -> tuple[int, float]:
    """(node count, total hourly price) of karpy's live nodes, checked against the cloud's bill:
    every instance has a Node and every Node an instance, and the bill is the nodes' price."""
    problem = karpy.consistent()
    assert problem == "", problem
    nodes = [n for n in karpy.nodes() if not n["metadata"].get("deletionTimestamp")]
    total = sum(node_price(n) for n in nodes)
    billed = sum(i.price for i in karpy.cloud.list())
    assert abs(total - billed) < 1e-9, (total, billed)
    return len(nodes), total


def steady_fleet(karpy: KarpyEnv) -> tuple[int, float] | None:
    """`fleet` for a wait while consolidation may still act: None while the Nodes and the bill
    disagree (a command launching or terminating between the two reads), else the fleet."""
    try:
        return fleet(karpy)
    except AssertionError:
        return None


def names(nodes: list[dict[str, Any]]) -> set[str]:
    return {n["metadata"]["name"] for n in nodes}


def settled(karpy: KarpyEnv, app: str, replicas: int) -> bool:
    """`replicas` pods of `app` Running, none pending or terminating, every node owned is live."""
    pods = karpy.pods(app)
    return (
        len(pods) == replicas
        and all(p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
                for p in pods)
        and not any(n["metadata"].get("deletionTimestamp") for n in karpy.nodes())
        and karpy.consistent() == ""
    )  # fmt: skip


def ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def pod_nodes(karpy: KarpyEnv, app: str) -> set[str]:
    return {p["spec"].get("nodeName", "") for p in karpy.pods(app)}


def blocked_events(karpy: KarpyEnv, node: str, text: str) -> list[dict[str, Any]]:
    return [
        e for e in karpy.events("DeprovisioningBlocked")
        if e["involvedObject"]["name"] == node and text in e["message"]
    ]  # fmt: skip


def actions(ctrl: Controller) -> dict[str, float]:
    """`karpenter_deprovisioning_actions_performed` by action (`<deprovisioner>/<action>`)."""
    return {
        sample.labels["action"]: sample.value
        for family in text_string_to_metric_families(ctrl.get("/metrics"))
        if family.name == "karpenter_deprovisioning_actions_performed"
        for sample in family.samples
    }


def evictions(karpy: KarpyEnv, app: str) -> list[dict[str, Any]]:
    return [e for e in karpy.events("Evicted") if e["involvedObject"].get("name", "").startswith(app + "-")]


# 1. scale to zero ----------------------------------------------------------------------------


def test_scale_to_zero_removes_the_nodes_within_30s_and_zeroes_status_resources(karpy: KarpyEnv) -> None:
    karpy.provisioner(ttlSecondsAfterEmpty=5)
    karpy.start("replica-a", *FAST)
    karpy.deployment("web", 12, cpu="1", memory="1Gi")
    until(lambda: len(karpy.running("web")) == 12, 20, "12 pods Running")
    before = names(karpy.nodes())
    assert before
    until(
        lambda: parse_resources(karpy.kube.get(PROVISIONERS, "default").get("status", {}).get("resources", {})),
        10,
        "status.resources to count the nodes",
    )

    karpy.scale("web", 0)
    scaled = time.monotonic()
    until(lambda: not karpy.nodes(), 30, "every node to be gone within 30 s of scaling to zero")
    elapsed = time.monotonic() - scaled

    def zero() -> bool:
        resources = karpy.kube.get(PROVISIONERS, "default").get("status", {}).get("resources") or {}
        return all(v == 0 for v in parse_resources(resources).values())

    until(zero, 5, "status.resources to be zero")
    assert karpy.cloud.list() == []
    assert [e for e in karpy.events("DeprovisioningTerminating") if e["involvedObject"]["name"] in before]
    print(f"{len(before)} node(s) gone {elapsed:.1f}s after scaling to zero")


def test_fleet_rejects_an_instance_the_cluster_has_no_node_for(karpy: KarpyEnv) -> None:
    """Issue 9 bug 4: `fleet` passed while the cloud billed an instance without a Node."""
    karpy.provisioner()
    m5 = tuple(it for it in simulated_catalog() if it.name == "m5.large")
    karpy.cloud.create(NodeRequest("default", Requirements(), m5))  # launched, but no Node was made
    assert karpy.consistent().startswith("instances without nodes")
    with pytest.raises(AssertionError, match="instances without nodes"):
        fleet(karpy)


# 2. consolidation ----------------------------------------------------------------------------


def test_consolidation_after_halving_a_deployment_leaves_fewer_or_cheaper_nodes(karpy: KarpyEnv) -> None:
    karpy.provisioner(consolidation={"enabled": True})
    ctrl = karpy.start("replica-a", *FAST)
    karpy.deployment("web", 16, cpu="1", memory="1Gi")
    until(lambda: settled(karpy, "web", 16), 30, "16 pods Running")
    count_before, price_before = fleet(karpy)
    first = names(karpy.nodes())

    karpy.scale("web", 8)
    halved = time.monotonic()

    def consolidated() -> tuple[int, float] | None:
        if not settled(karpy, "web", 8) or names(karpy.nodes()) == first:
            return None
        now = steady_fleet(karpy)
        if now is None:
            return None
        count, price = now
        return (count, price) if count < count_before or price < price_before - 1e-9 else None

    count_after, price_after = until(consolidated, 60, "fewer or cheaper nodes with 8 pods Running")
    elapsed = time.monotonic() - halved
    assert count_after < count_before or price_after < price_before
    assert karpy.consistent() == ""
    # it is consolidation's doing, and karpy said so on the nodes it removed
    assert {"consolidation/delete", "consolidation/replace"} & set(actions(ctrl)), actions(ctrl)
    removed = first - names(karpy.nodes())
    assert removed
    assert [e for e in karpy.events("DeprovisioningTerminating") if e["involvedObject"]["name"] in removed]
    print(
        f"consolidated in {elapsed:.1f}s: {count_before} node(s) ${price_before:.4f}/h"
        f" -> {count_after} node(s) ${price_after:.4f}/h"
    )


def test_a_half_empty_node_no_single_node_can_take_over_is_repacked_onto_two(karpy: KarpyEnv) -> None:
    """Repack consolidation (karpy's): 4 pods of 4 cpu left on a 32-vCPU node need more than any
    16-vCPU node's allocatable, so Karpenter's consolidators keep it; karpy replaces it with two
    smaller nodes, cheaper together."""
    karpy.provisioner(consolidation={"enabled": True},
                      requirements=[{"key": L.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}])  # fmt: skip
    ctrl = karpy.start("replica-a", *FAST)
    karpy.deployment("web", 7, cpu="4", memory="1Gi")
    until(lambda: settled(karpy, "web", 7), 30, "7 pods Running")
    count_before, price_before = fleet(karpy)
    assert count_before == 1, "the scenario needs the 7 pods on one node"
    first = names(karpy.nodes())

    karpy.scale("web", 4)

    def repacked() -> tuple[int, float] | None:
        if not settled(karpy, "web", 4) or names(karpy.nodes()) & first:
            return None
        return steady_fleet(karpy)

    count_after, price_after = until(repacked, 60, "the node replaced, 4 pods Running")
    assert count_after == 2 and price_after < price_before, (count_after, price_after, price_before)
    assert actions(ctrl).get("consolidation/replace") == 1, actions(ctrl)
    print(f"repacked: 1 node ${price_before:.4f}/h -> {count_after} nodes ${price_after:.4f}/h")


# 3. do-not-evict -----------------------------------------------------------------------------


def _one_underused_node(karpy: KarpyEnv, provisioner: dict[str, Any], **pod: Any) -> str:
    """One node holding `keep` (1 small pod, with `pod` overrides) after `filler` has gone: a node
    consolidation would replace by a cheaper one (and expiry would replace) if it could."""
    karpy.provisioner(**provisioner)
    karpy.start("replica-a", *FAST)
    karpy.deployment("keep", 1, cpu="500m", memory="256Mi", **pod)
    karpy.deployment("filler", 7, cpu="1", memory="1Gi")
    until(lambda: settled(karpy, "keep", 1) and settled(karpy, "filler", 7), 30, "keep and filler Running")
    (node,) = pod_nodes(karpy, "keep")
    karpy.scale("filler", 0)
    until(lambda: not karpy.pods("filler"), 20, "filler pods gone")
    return node


def test_a_do_not_evict_pod_keeps_its_node_from_consolidation_and_expiry(karpy: KarpyEnv) -> None:
    ttl = 15
    node = _one_underused_node(
        karpy,
        {"consolidation": {"enabled": True}, "ttlSecondsUntilExpired": ttl},
        metadata={"annotations": {L.DO_NOT_EVICT: "true"}},
    )
    (pod,) = karpy.pods("keep")
    until(lambda: blocked_events(karpy, node, "do not evict"), 30, "a DeprovisioningBlocked do-not-evict event")
    created = karpy.kube.get(NODES, node)["metadata"]["creationTimestamp"]
    # until well past the TTL and several validation waits: the node, its pod and its schedulability stay
    expires = datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp() + ttl

    def kept_past_expiry() -> bool:
        current = karpy.kube.get(NODES, node)
        assert current["metadata"]["creationTimestamp"] == created
        assert not current["metadata"].get("deletionTimestamp")
        assert not current["spec"].get("unschedulable")
        assert karpy.kube.get(PODS, pod["metadata"]["name"], karpy.namespace)["spec"]["nodeName"] == node
        return time.time() >= expires + 5

    until(kept_past_expiry, ttl + 60, "the node, its pod and its schedulability kept past the TTL", interval=1.0)
    karpy.passes("deprovisioning", 6)
    assert node in names(karpy.nodes())
    assert not evictions(karpy, "keep")

    # control: once the annotation is gone the same node is expired and replaced
    karpy.kube.patch(PODS, pod["metadata"]["name"], {"metadata": {"annotations": {L.DO_NOT_EVICT: None}}},
                     karpy.namespace)  # fmt: skip
    until(lambda: karpy.node_gone(node), 30, "the node to go once the pod may be evicted")
    until(lambda: settled(karpy, "keep", 1), 30, "keep Running on another node")


# 4. PDB, consolidation side ------------------------------------------------------------------


def test_a_pdb_allowing_no_disruption_makes_its_node_no_consolidation_candidate(karpy: KarpyEnv) -> None:
    node = _one_underused_node(karpy, {"consolidation": {"enabled": True}})
    karpy.apply(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "keep", "namespace": karpy.namespace},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "keep"}}},
        }
    )
    until(lambda: blocked_events(karpy, node, "prevents pod evictions"), 30, "a DeprovisioningBlocked PDB event")
    (pod,) = karpy.pods("keep")
    karpy.passes("deprovisioning", 12)  # several passes and validation waits (0.5 s apart, waits of 2 s)
    current = karpy.kube.get(NODES, node)
    assert not current["metadata"].get("deletionTimestamp") and not current["spec"].get("unschedulable")
    assert names(karpy.nodes()) == {node}
    assert [p["metadata"]["name"] for p in karpy.running("keep")] == [pod["metadata"]["name"]]
    assert not evictions(karpy, "keep")
    assert not [e for e in karpy.events("FailedDraining") if e["involvedObject"].get("name") == pod["metadata"]["name"]]

    # control: without the PDB the same node is consolidated (replaced by a cheaper one)
    price = node_price(current)
    karpy.kube.delete(PDBS, "keep", karpy.namespace)
    until(lambda: karpy.node_gone(node), 40, "the node to be consolidated once the PDB is gone")
    until(lambda: settled(karpy, "keep", 1), 30, "keep Running on the replacement")
    count, total = fleet(karpy)
    assert count <= 1 and total < price


# 5. expiry -----------------------------------------------------------------------------------


def test_expiry_replaces_a_node_after_its_ttl_and_the_pods_move(karpy: KarpyEnv) -> None:
    ttl = 20
    karpy.provisioner(ttlSecondsUntilExpired=ttl)
    ctrl = karpy.start("replica-a", *FAST)
    karpy.deployment("web", 3, cpu="1", memory="1Gi")
    until(lambda: settled(karpy, "web", 3), 20, "3 pods Running")
    old = names(karpy.nodes())
    old_pods = {p["metadata"]["name"] for p in karpy.pods("web")}
    started = time.monotonic()

    # what the cluster looked like when each old node was first seen deleting
    deleting: dict[str, list[dict[str, Any]]] = {}

    def replaced() -> set[str] | None:
        nodes = karpy.nodes()
        for n in nodes:
            if n["metadata"]["name"] in old and n["metadata"].get("deletionTimestamp"):
                deleting.setdefault(n["metadata"]["name"], nodes)
        current = names(nodes)
        if current & old or not current or not settled(karpy, "web", 3):
            return None
        return current

    new = until(replaced, ttl + 40, "the old node(s) gone and the pods Running on new ones", interval=0.1)
    elapsed = time.monotonic() - started
    # replacement capacity was up before the old node was deleted (spec §6.7)
    assert set(deleting) == old, "an old node went without being seen deleting"
    for nodes in deleting.values():
        assert [n for n in nodes if n["metadata"]["name"] not in old and ready(n)], nodes
    assert pod_nodes(karpy, "web") <= new
    assert not old_pods & {p["metadata"]["name"] for p in karpy.pods("web")}
    assert actions(ctrl).get("expiration/replace", 0) >= len(old), actions(ctrl)
    assert [e for e in karpy.events("DeprovisioningTerminating") if e["involvedObject"]["name"] in old]
    assert karpy.consistent() == ""
    print(f"expired node(s) {sorted(old)} replaced by {sorted(new)} {elapsed:.1f}s after the pods ran")
