"""Karpenter's capacity metrics from one snapshot, with Karpenter's names and label columns."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from controller.capacity import CapacityCollector, metric_families
from controller.exposition import exposition
from controller.state.snapshot import Snapshot
from tests.builders.wire import make_node, make_pod
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


def samples(name: str) -> list[tuple[dict[str, str], float]]:
    for family in metric_families(snapshot(), PRICES):
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
    text = generate_latest(registry).decode()
    assert "karpenter_nodes_allocatable{" in text and "karpenter_pods_state{" in text


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
    families = {f.name for f in metric_families(sim.state.snapshot(), {})}
    wanted = {name: labels for name, labels in dashboard_needs("capacity").items() if name in families}
    assert set(wanted) == {"karpenter_nodes_allocatable", "karpenter_nodes_total_daemon_requests",
                           "karpenter_nodes_total_pod_requests", "karpenter_pods_state"}  # fmt: skip
    assert missing("", wanted)  # the check can fail
    assert missing(exposition(registry).decode(), wanted) == []
