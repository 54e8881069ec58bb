"""bench/karpenter_e2e.py's pure parts: Karpenter kwok's instance types as karpy's catalog, the
summary of where the time to Running went, karpy's fresh provisioning price."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.karpenter_e2e import Catalog, fleet_state, fresh_price, kwok_catalog, spread_skew, stage_summary, workloads
from controller.clock import FakeClock
from controller.cloudprovider.simulated.catalog import catalog_from_json
from controller.core import labels as L
from controller.kube.resources import NODES, PODS
from tests.builders.wire import make_node, make_pod
from tests.fakes.kube import FakeKube

KWOK_TYPE = {
    "name": "m-4x-amd64-linux",
    "offerings": [
        {
            "Price": 0.2,
            "Available": True,
            "Requirements": [
                {"key": L.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},
                {"key": L.ZONE, "operator": "In", "values": ["test-zone-b"]},
            ],
        },
        {
            "Price": 0.1,
            "Available": True,
            "Requirements": [
                {"key": L.CAPACITY_TYPE, "operator": "In", "values": ["spot"]},
                {"key": L.ZONE, "operator": "In", "values": ["test-zone-b"]},
            ],
        },
    ],
    "architecture": "amd64",
    "operatingSystems": ["linux"],
    "resources": {"cpu": "4", "memory": "32Gi", "ephemeral-storage": "20Gi"},
}


def test_kwok_types_read_as_karpenter_kwok_builds_them() -> None:
    catalog = kwok_catalog([KWOK_TYPE])
    (it,) = catalog_from_json(catalog)
    assert it.capacity["pods"] == 110  # absent: Kubernetes' default, as the kwok provider sets it
    assert it.overhead == {"cpu": 100, "memory": 10 * 2**20}  # its kube-reserved
    assert it.labels[L.ARCH] == "amd64" and it.labels[L.OS] == "linux"
    assert {(o.zone, o.capacity_type, o.price) for o in it.offerings} == {
        ("test-zone-b", "on-demand", 0.2),
        ("test-zone-b", "spot", 0.1),
    }
    prices = Catalog.of(catalog).prices
    assert prices[("m-4x-amd64-linux", "test-zone-b", "spot")] == 0.1


def test_each_size_keeps_the_shapes_proportions() -> None:
    for pods in (1000, 5000, 20000):
        loads = workloads(pods)
        assert sum(w[1] for w in loads) == pods
        assert sum(1 for w in loads if w[4]) == 1  # one zonal-spread Deployment


def test_stage_summary_gives_when_half_and_all_got_there_and_each_steps_latency() -> None:
    started = 100.0
    stages = {
        f"uid-{i}": {"created": started + i, "unschedulable": started + i + 1, "bound": started + i + 3,
                     "running": started + i + 4}
        for i in range(10)
    }  # fmt: skip
    stages["late"] = {"created": started + 20}  # never marked, bound or Running
    out = stage_summary(stages, started, 11)
    assert out["created"] == {"pods": 11, "first": 0.0, "half": 4.0, "all": 20.0, "rate": 1.0}
    assert out["running"]["pods"] == 10 and out["running"]["all"] is None  # one of 11 not Running
    assert out["running"]["half"] == 8.0
    assert out["unschedulable→bound"] == {"pods": 10, "p50": 2.0, "p90": 2.0, "max": 2.0}
    assert out["bound→running"]["p50"] == 1.0


def test_fresh_price_is_one_decision_over_every_remaining_pod(tmp_path: Path) -> None:
    catalog = kwok_catalog([KWOK_TYPE])  # 4 CPUs, 32Gi: 3.9 CPUs allocatable
    # 12 pods of bench-worker (1 CPU, 2Gi): 3 a node (pods: 110), 4 nodes at the cheapest offering
    price = fresh_price(catalog, {"bench-worker": 12, "bench-api": 0}, tmp_path)
    assert price == 4 * 0.2  # on-demand only: the Provisioner's requirements


def test_a_fleet_with_a_node_draining_is_not_settled() -> None:
    def node(name: str, label: str = L.PROVISIONER_NAME, **extra: object) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "labels": {label: "default"}}
        if "deleting" in extra:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        spec: dict[str, Any] = {"unschedulable": True} if "cordoned" in extra else {}
        if "disrupted" in extra:
            spec = {"taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}
        return {"metadata": meta, "spec": spec}

    nodes = [node("a"), node("b", deleting=True), node("c", cordoned=True), node("d", disrupted=True),
             node("other", label="not-ours")]  # fmt: skip
    names, busy = fleet_state(nodes, L.PROVISIONER_NAME)
    assert names == {"a", "b", "c", "d"} and busy == {"b", "c", "d"}
    assert fleet_state([node("a")], L.PROVISIONER_NAME) == (frozenset({"a"}), frozenset())


def test_spread_skew_counts_running_pods_over_the_autoscalers_zones_not_those_being_deleted() -> None:
    kube = FakeKube(FakeClock())
    for name, zone in (("a1", "za"), ("b1", "zb"), ("b2", "zb")):
        kube.put(NODES, make_node(name, labels={L.PROVISIONER_NAME: "default", L.ZONE: zone}))
    kube.put(NODES, make_node("other", labels={L.ZONE: "zc"}))  # not the autoscaler's: its zone is not counted
    pods = [("w1", "a1"), ("w2", "b1"), ("w3", "b2"), ("w4", "b2"), ("w5", "other")]
    for name, node in pods:
        kube.put(PODS, make_pod(name, node=node, phase="Running", labels={"app": "web"}))
    kube.put(PODS, make_pod("api", node="a1", phase="Running", labels={"app": "api"}))
    assert spread_skew(kube, "web", L.PROVISIONER_NAME) == 2  # za 1, zb 3
    leaving = kube.get(PODS, "w4", "default")
    leaving["metadata"]["deletionTimestamp"] = "2026-11-26T12:00:00Z"  # evicted, still Running until it goes
    kube.put(PODS, leaving)
    assert spread_skew(kube, "web", L.PROVISIONER_NAME) == 1
