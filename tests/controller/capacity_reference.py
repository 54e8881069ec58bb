"""The capacity gauges as `controller/capacity.py` built them until issue 21's /metrics work:
prometheus_client families of one `Sample` per series, written by `exposition()`'s generic path
(label dicts sorted per sample). Kept unchanged as the oracle the text rendering must match byte
for byte (`test_capacity.py`); the values it renders come from `controller/capacity.py`'s own
helpers, since what it checks is the rendering, not how a value is read.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client.core import GaugeMetricFamily

from controller.capacity import NA, NODE_LABELS, POD_LABELS, WELL_KNOWN, _node_phase, _owner, _value, pod_sums
from controller.core import labels as L
from controller.insight import PriceKey, node_price
from controller.metrics import resource_column
from controller.state.snapshot import NodeView, Snapshot


def _node_columns(node: NodeView) -> list[str]:
    return [node.name, node.provisioner or NA, _node_phase(node)]


def _well_known(node: NodeView) -> list[str]:
    return [node.labels.get(k, NA) for k in WELL_KNOWN]


def reference_families(snapshot: Snapshot, prices: Mapping[PriceKey, float]) -> list[GaugeMetricFamily]:
    """Every capacity gauge for `snapshot` (pure)."""
    allocatable = GaugeMetricFamily("karpenter_nodes_allocatable", "Node allocatable", labels=NODE_LABELS)
    pod_requests = GaugeMetricFamily(
        "karpenter_nodes_total_pod_requests", "Node total pod requests (non-DaemonSet pods)", labels=NODE_LABELS
    )
    pod_limits_family = GaugeMetricFamily(
        "karpenter_nodes_total_pod_limits", "Node total pod limits (non-DaemonSet pods)", labels=NODE_LABELS
    )
    daemon_requests = GaugeMetricFamily(
        "karpenter_nodes_total_daemon_requests", "Node total DaemonSet pod requests", labels=NODE_LABELS
    )
    daemon_limits = GaugeMetricFamily(
        "karpenter_nodes_total_daemon_limits", "Node total DaemonSet pod limits", labels=NODE_LABELS
    )
    overhead = GaugeMetricFamily(
        "karpenter_nodes_system_overhead", "Node capacity minus allocatable", labels=NODE_LABELS
    )
    price = GaugeMetricFamily(
        "karpy_nodes_price_per_hour", "Hourly price of the node's offering", labels=NODE_LABELS[:3] + NODE_LABELS[4:]
    )
    pods_state = GaugeMetricFamily("karpenter_pods_state", "Pod state", labels=POD_LABELS)
    for node in sorted(snapshot.nodes.values(), key=lambda n: n.name):
        columns, known = _node_columns(node), _well_known(node)
        for resource, amount in sorted(node.allocatable.items()):
            allocatable.add_metric([*columns, resource_column(resource), *known], _value(resource, amount))
        for resource, amount in sorted(node.capacity.items()):
            reserved = amount - node.allocatable.get(resource, 0)
            overhead.add_metric([*columns, resource_column(resource), *known], _value(resource, reserved))
        totals = pod_sums(node)
        families = (pod_requests, pod_limits_family, daemon_requests, daemon_limits)
        for family, summed in zip(families, totals, strict=True):
            for resource, amount in sorted(summed.items()):
                family.add_metric([*columns, resource_column(resource), *known], _value(resource, amount))
        cost = node_price(node, prices)
        if node.owned and cost is not None:
            price.add_metric([*columns, *known], cost)
    for pod in sorted(snapshot.pods.values(), key=lambda p: p.key):
        host = snapshot.nodes.get(pod.node_name)
        labels = host.labels if host is not None else {}
        pods_state.add_metric(
            [pod.name, pod.namespace, _owner(pod.obj, pod.namespace), pod.node_name or NA,
             labels.get(L.PROVISIONER_NAME, NA), labels.get(L.ZONE, NA), labels.get(L.ARCH, NA),
             labels.get(L.CAPACITY_TYPE, NA), labels.get(L.INSTANCE_TYPE, NA), pod.phase or NA],
            1.0,
        )  # fmt: skip
    return [allocatable, pod_requests, pod_limits_family, daemon_requests, daemon_limits, overhead, price, pods_state]
