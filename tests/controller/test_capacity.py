"""Karpenter's capacity metrics from one snapshot, with Karpenter's names and label columns."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from controller import capacity
from controller.capacity import CapacityCollector, capacity_families
from controller.core import labels as L
from controller.exposition import exposition
from controller.insight import PriceKey
from controller.state.snapshot import NodeView, Snapshot
from tests.builders.wire import make_node, make_pod
from tests.controller.capacity_reference import reference_families
from tests.controller.provisioning.simcluster import SimCluster
from tests.fakes.world import state_of
from tests.support.promql import dashboard_needs, missing

PRICES = {("m5.large", "us-west-2a", "on-demand"): 0.096}
WEB = [
    {
        "name": "app",
        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "2Gi"}},
    },
    {"name": "side", "resources": {"limits": {"memory": "1Gi"}}},
]
WEB_INIT = [{"name": "init", "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "1500m"}}}]
AGENT_LIMITS = {"memory": "256Mi", "ephemeral-storage": "1Gi"}
AGENT = [{"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": AGENT_LIMITS}}]


def snapshot() -> Snapshot:
    objects = {
        "nodes": [make_node("n1", cpu="2", memory="8Gi"), make_node("static", provisioner=None)],
        "pods": [
            make_pod("web", node="n1", containers=WEB, initContainers=WEB_INIT),
            make_pod("agent", node="n1", owner_kind="DaemonSet", containers=AGENT),
            make_pod("waiting", cpu="1"),
        ],
    }
    return state_of(objects).snapshot()


def written(snap: Snapshot, prices: Mapping[PriceKey, float]) -> str:
    registry = CollectorRegistry()
    registry.register(CapacityCollector(lambda: snap, lambda: prices))
    return exposition(registry).decode()


def samples(name: str) -> list[tuple[dict[str, str], float]]:
    for family in text_string_to_metric_families(written(snapshot(), PRICES)):
        if family.name == name:
            return [(s.labels, s.value) for s in family.samples]
    raise AssertionError(f"no family {name}")


def value(name: str, **labels: str) -> float:
    found = [v for lab, v in samples(name) if all(lab.get(k) == want for k, want in labels.items())]
    assert len(found) == 1, (name, labels, samples(name))
    return found[0]


def test_node_gauges_split_pods_from_daemons_in_karpenter_units() -> None:
    assert value("karpenter_nodes_allocatable", node_name="n1", resource_type="cpu") == 2.0
    assert value("karpenter_nodes_allocatable", node_name="n1", resource_type="memory") == 8 * 2**30
    assert value("karpenter_nodes_total_pod_requests", node_name="n1", resource_type="cpu") == 0.5
    assert value("karpenter_nodes_total_daemon_requests", node_name="n1", resource_type="memory") == 128 * 2**20
    assert value("karpenter_nodes_system_overhead", node_name="n1", resource_type="cpu") == 0.0


def test_limits_as_karpenters_ceiling_and_pods_counted() -> None:
    # containers' limits summed (1 + 0 cores; 2Gi + 1Gi), at least the largest init container's
    assert value("karpenter_nodes_total_pod_limits", node_name="n1", resource_type="cpu") == 1.5
    assert value("karpenter_nodes_total_pod_limits", node_name="n1", resource_type="memory") == 3 * 2**30
    assert value("karpenter_nodes_total_daemon_limits", node_name="n1", resource_type="memory") == 256 * 2**20
    assert value("karpenter_nodes_total_daemon_limits", node_name="n1", resource_type="ephemeral_storage") == 2**30
    # the pods themselves, as the capacity dashboard's "pods" panel reads them
    for name in ("karpenter_nodes_total_pod_requests", "karpenter_nodes_total_pod_limits",
                 "karpenter_nodes_total_daemon_requests", "karpenter_nodes_total_daemon_limits"):  # fmt: skip
        assert value(name, node_name="n1", resource_type="pods") == 1.0
    assert not [lab for lab, _ in samples("karpenter_nodes_total_pod_limits") if lab["node_name"] == "static"]


def test_node_series_carry_karpenters_label_columns() -> None:
    labels, _ = samples("karpenter_nodes_allocatable")[0]
    for column in ("node_name", "provisioner", "phase", "resource_type", "zone", "instance_type", "capacity_type",
                   "arch", "instance_category"):  # fmt: skip
        assert column in labels
    assert value("karpenter_nodes_allocatable", node_name="static", resource_type="cpu", provisioner="N/A") == 2.0


def test_pods_state_one_series_per_pod() -> None:
    pods = {lab["name"]: lab for lab, v in samples("karpenter_pods_state") if v == 1.0}
    assert set(pods) == {"web", "agent", "waiting"}
    assert pods["web"]["node"] == "n1" and pods["web"]["instance_type"] == "m5.large"
    assert pods["waiting"]["node"] == "N/A" and pods["waiting"]["phase"] == "Pending"
    assert pods["web"]["owner"] == "/api/v1/namespaces/default/replicasets/owner"


def test_price_only_for_priced_karpy_nodes() -> None:
    assert samples("karpy_nodes_price_per_hour") == [(samples("karpy_nodes_price_per_hour")[0][0], 0.096)]
    assert samples("karpy_nodes_price_per_hour")[0][0]["node_name"] == "n1"


def test_the_collector_serves_them_on_a_registry() -> None:
    registry = CollectorRegistry()
    registry.register(CapacityCollector(snapshot, lambda: PRICES))
    text = exposition(registry).decode()
    assert "# TYPE karpenter_nodes_allocatable gauge\nkarpenter_nodes_allocatable{" in text
    assert "# HELP karpenter_pods_state Pod state\n# TYPE karpenter_pods_state gauge\nkarpenter_pods_state{" in text


def test_registering_reads_neither_the_cluster_nor_the_cloud() -> None:
    """Issue 20, defect 5: registration called `collect()`, whose prices came from the cloud; a bad
    AWS credential raised there and the controller exited at start."""

    def unreachable() -> dict[tuple[str, str, str], float]:
        raise RuntimeError("ec2 DescribeInstanceTypes: AuthFailure")

    registry = CollectorRegistry(auto_describe=True)
    collector = CapacityCollector(snapshot, unreachable)
    registry.register(collector)
    assert "karpenter_pods_state" in {m.name for m in collector.describe()}
    registry.unregister(collector)


def test_the_capacity_dashboards_node_and_pod_queries_read_a_provisioned_cluster() -> None:
    # karpy's provisioning has launched and bound three pods, the DaemonSet's pod is on the node
    sim = SimCluster(with_daemonset=True)
    for _ in range(3):
        sim.add_pod("web")
    sim.kube_scheduler()  # no node yet: marked unschedulable
    sim.batch()
    sim.sync()
    assert [len(n.pods) for n in sim.state.snapshot().nodes.values()] == [4]
    registry = CollectorRegistry()
    registry.register(CapacityCollector(sim.state.snapshot, lambda: {}))
    families = {f.name for f in capacity_families(sim.state.snapshot(), {})}
    wanted = {name: labels for name, labels in dashboard_needs("capacity").items() if name in families}
    assert set(wanted) == {"karpenter_nodes_allocatable", "karpenter_nodes_total_daemon_requests",
                           "karpenter_nodes_total_pod_requests", "karpenter_pods_state"}  # fmt: skip
    assert missing("", wanted)  # the check can fail
    assert missing(exposition(registry).decode(), wanted) == []


# --- written as text: byte for byte what the prometheus_client families wrote (issue 21) ----------

ODD = 'a"b\\c\nd'  # every character the text format escapes in a label value
ZONES = ("us-west-2a", "us-west-2b", ODD)


class Reference(Collector):
    """Today's families before the text rendering, written by exposition's generic path."""

    def __init__(self, snap: Callable[[], Snapshot], prices: Callable[[], Mapping[PriceKey, float]]) -> None:
        self._snap, self._prices = snap, prices

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from reference_families(self._snap(), self._prices())


def reference(snap: Snapshot, prices: Mapping[PriceKey, float]) -> str:
    registry = CollectorRegistry()
    registry.register(Reference(lambda: snap, lambda: prices))
    return exposition(registry).decode()


def varied_node(rng: random.Random, i: int) -> dict[str, Any]:
    labels = {L.ZONE: rng.choice(ZONES), L.ARCH: rng.choice(["amd64", "arm64"]), L.OS: "linux",
              L.INSTANCE_FAMILY: rng.choice(["m5", "c6g", ODD]),
              L.INSTANCE_CPU: str(rng.choice([2, 4, 16]))}  # fmt: skip
    if rng.random() < 0.3:
        del labels[L.ZONE]  # a column the node lacks: N/A
    node = make_node(f"node-{i:02d}" if i % 7 else f"node-{ODD}-{i}", provisioner=rng.choice(["default", "gpu", None]),
                     ready=rng.random() < 0.8, instance_type=rng.choice(["m5.large", "c6g.xlarge"]), labels=labels,
                     cpu=rng.choice(["2", "3500m", "16"]), memory=rng.choice(["8Gi", "7Gi", "3999Mi"]))  # fmt: skip
    status = node["status"]
    status["capacity"] = {**status["capacity"], "ephemeral-storage": "20Gi", "nvidia.com/gpu": "1"}
    if rng.random() < 0.5:  # reserved: capacity above allocatable
        status["allocatable"] = {**status["allocatable"], "cpu": "1930m", "ephemeral-storage": "18Gi"}
    if rng.random() < 0.2:
        status["phase"] = rng.choice(["Running", "Pending", ODD])
    return node


def varied_pod(rng: random.Random, j: int, nodes: list[str]) -> dict[str, Any]:
    host = rng.choice([*nodes, "", "node-gone"])
    containers: list[dict[str, Any]] = [{"name": "c", "resources": {
        "requests": {"cpu": rng.choice(["100m", "1", "250m"]), "memory": rng.choice(["64Mi", "1Gi"])},
        "limits": rng.choice([{}, {"cpu": "2"}, {"memory": "2Gi", "ephemeral-storage": "1Gi"},
                              {"cpu": "lots"}, {"nvidia.com/gpu": "1"}])}}]  # fmt: skip
    spec: dict[str, Any] = {"containers": containers}
    if rng.random() < 0.2:
        spec["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "3"}, "limits": {"cpu": "4"}}}]
    pod = make_pod(f"pod-{j:03d}" if j % 11 else f"pod-{ODD}-{j}", namespace=rng.choice(["default", "team-a"]),
                   node=host, owner_kind=rng.choice(["ReplicaSet", "DaemonSet", "Job", ""]),
                   phase=rng.choice(["Pending", "Running", "Succeeded", "Failed", ""]), **spec)  # fmt: skip
    refs = pod["metadata"].get("ownerReferences") or []
    if refs and rng.random() < 0.3:
        refs[0].update(apiVersion="apps/v1", name=ODD)
    if rng.random() < 0.05:
        pod["spec"]["containers"] = "not a list"  # its requests do not parse: no request, no totals
    return pod


def varied(seed: int, nodes: int = 24, pods: int = 240) -> dict[str, list[dict[str, Any]]]:
    rng = random.Random(seed)
    node_objs = [varied_node(rng, i) for i in range(nodes)]
    names = [n["metadata"]["name"] for n in node_objs]
    return {"nodes": node_objs, "pods": [varied_pod(rng, j, names) for j in range(pods)]}


def varied_prices(objects: Mapping[str, Iterable[dict[str, Any]]], scale: float = 1.0) -> dict[PriceKey, float]:
    prices = {}
    for i, node in enumerate(objects["nodes"]):
        lab = node["metadata"]["labels"]
        key = (lab.get(L.INSTANCE_TYPE, ""), lab.get(L.ZONE, ""), lab.get(L.CAPACITY_TYPE, ""))
        if i % 5:  # some owned nodes without a price
            prices[key] = round(0.0416 * (1 + i % 4) * scale, 4)
    return prices


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_text_is_byte_for_byte_what_the_families_wrote(seed: int) -> None:
    objects = varied(seed)
    snap, prices = state_of(copy.deepcopy(objects)).snapshot(), varied_prices(objects)
    text = written(snap, prices)
    assert text == reference(snap, prices)
    # the state is as varied as meant: escaped values, N/A columns, every family written
    assert '\\"b\\\\c\\nd' in text and 'zone="N/A"' in text and 'node="N/A"' in text
    for family in text_string_to_metric_families(text):
        assert family.samples, family.name


def test_lines_kept_between_scrapes_follow_every_change() -> None:
    objects = varied(7)
    state = state_of(copy.deepcopy(objects))
    prices = varied_prices(objects)
    registry = CollectorRegistry()
    registry.register(CapacityCollector(state.snapshot, lambda: prices))
    assert exposition(registry).decode() == reference(state.snapshot(), prices)

    def bump(obj: dict[str, Any]) -> dict[str, Any]:
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
        return obj

    pods, nodes = objects["pods"], objects["nodes"]
    moved = bump(next(p for p in pods if p["spec"].get("nodeName", "").startswith("node-")))
    moved["status"]["phase"] = "Succeeded"  # its node's totals change, its own line too
    state.apply("pods", "MODIFIED", moved)
    state.apply("pods", "DELETED", pods[1])
    relabelled = bump(nodes[2])
    relabelled["metadata"]["labels"][L.ARCH] = "riscv64"  # every pod on it changes too
    state.apply("nodes", "MODIFIED", relabelled)
    state.apply("nodes", "DELETED", nodes[3])  # its pods' node columns go N/A
    state.apply("pods", "ADDED", make_pod("late", node=nodes[4]["metadata"]["name"], cpu="3"))
    state.record_binding("default/late-bound", nodes[5]["metadata"]["name"])  # bound by karpy, not seen yet
    state.apply("pods", "ADDED", make_pod("late-bound"))
    state.record_node(make_node("in-flight", instance_type="c6g.xlarge"))
    prices = varied_prices(objects, scale=2.0)  # read anew: every price differs
    for _ in range(2):  # changed, then unchanged
        assert exposition(registry).decode() == reference(state.snapshot(), prices)


def test_a_settled_cluster_is_written_from_the_kept_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    objects = varied(11)
    state = state_of(copy.deepcopy(objects))
    collector = CapacityCollector(state.snapshot, lambda: varied_prices(objects))
    written_nodes: list[str] = []
    node_lines = capacity.node_lines

    def counting(node: NodeView, price: float | None) -> tuple[str, ...]:
        written_nodes.append(node.name)
        return node_lines(node, price)

    monkeypatch.setattr(capacity, "node_lines", counting)
    list(collector.collect())
    assert len(written_nodes) == len(objects["nodes"])
    written_nodes.clear()
    list(collector.collect())
    assert written_nodes == []
    pod = copy.deepcopy(next(p for p in objects["pods"] if p["spec"].get("nodeName", "").startswith("node-")))
    pod["metadata"]["resourceVersion"], pod["status"]["phase"] = "2", "Failed"
    state.apply("pods", "MODIFIED", pod)
    list(collector.collect())
    assert written_nodes == [pod["spec"]["nodeName"]]
