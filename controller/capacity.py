"""Karpenter's capacity metrics, computed from cluster state at scrape time (spec §9.1).

A prometheus_client custom collector: each scrape reads one snapshot and yields
`karpenter_pods_state`, `karpenter_nodes_allocatable`, `karpenter_nodes_total_pod_requests` /
`_total_pod_limits`, `karpenter_nodes_total_daemon_requests` / `_total_daemon_limits`,
`karpenter_nodes_system_overhead` and karpy's
`karpy_nodes_price_per_hour` — with the provisioner usage/limit gauges the limit counter
(`provisioning/counter.py`) sets, Karpenter's Grafana capacity dashboard reads karpy unchanged.
Node series carry Karpenter's label columns: `node_name`, `provisioner`,
`phase`, `resource_type` and one column per well-known label, named as Karpenter names them
(the key's last path segment, lower case, `-` → `_`: `zone`, `instance_type`, `capacity_type`);
resource types are snake-cased the same way (`ephemeral_storage`). CPU is in cores, memory and
storage in bytes; the pod gauges count the pods themselves as `pods`, as Karpenter's do. A pod
whose limits do not parse counts in the requests only.

At 1,000 nodes / 20,000 pods these are ~33,000 series (issue 21), so they are written straight to
text (`exposition.TextFamily`) a node and a pod at a time — `node_lines(node, price)` and
`pod_line(pod, host_labels)`, both pure — and `Lines` keeps each one's text from the last scrape
while the views it was written from are the same objects (cluster state keeps a view per
resourceVersion and a node's pod tuple until one of its pods changes), so a scrape of a settled
cluster is a sort and a join. `capacity_families(snapshot, prices)` is pure.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client.registry import Collector

from controller.core import labels as L
from controller.core.resources import CPU, PODS
from controller.exposition import TextFamily, escape, labels_text, number
from controller.insight import PriceKey, node_price
from controller.metrics import resource_column
from controller.scheduling.pods import PodSpecError, pod_limits
from controller.state.snapshot import NodeView, PodView, Snapshot

NA = "N/A"
WELL_KNOWN = sorted(k for k in L.WELL_KNOWN_LABELS if k != L.PROVISIONER_NAME)


def label_column(key: str) -> str:
    return key.rsplit("/", 1)[-1].lower().replace("-", "_")


NODE_LABELS = ["node_name", "provisioner", "phase", "resource_type", *(label_column(k) for k in WELL_KNOWN)]
POD_LABELS = ["name", "namespace", "owner", "node", "provisioner", "zone", "arch", "capacity_type", "instance_type",
              "phase"]  # fmt: skip


@dataclass(frozen=True)
class Family:
    name: str
    documentation: str


# the node families in the order they are written, each node's lines in this order (`node_lines`)
NODE_FAMILIES = (
    Family("karpenter_nodes_allocatable", "Node allocatable"),
    Family("karpenter_nodes_total_pod_requests", "Node total pod requests (non-DaemonSet pods)"),
    Family("karpenter_nodes_total_pod_limits", "Node total pod limits (non-DaemonSet pods)"),
    Family("karpenter_nodes_total_daemon_requests", "Node total DaemonSet pod requests"),
    Family("karpenter_nodes_total_daemon_limits", "Node total DaemonSet pod limits"),
    Family("karpenter_nodes_system_overhead", "Node capacity minus allocatable"),
    Family("karpy_nodes_price_per_hour", "Hourly price of the node's offering"),  # no resource_type column
)
PODS_STATE = Family("karpenter_pods_state", "Pod state")


def _order(names: Sequence[str]) -> list[tuple[str, int]]:
    """Label names as the text format lists them (sorted by name), each with the index of its value
    in `names`' order — a label set as prometheus_client's families kept it, a dict sorted on output."""
    return sorted({name: i for i, name in enumerate(names)}.items())


_NODE_ORDER = _order(NODE_LABELS)
_RESOURCE_AT = [name for name, _ in _NODE_ORDER].index("resource_type")
_POD_ORDER = _order(POD_LABELS)


def _value(resource: str, amount: int) -> float:
    return amount / 1000.0 if resource == CPU else float(amount)


def _node_phase(node: NodeView) -> str:
    phase = (node.obj.get("status") or {}).get("phase")
    return str(phase) if phase else ("Ready" if node.ready else "NotReady")


def _owner(pod_obj: Mapping[str, Any], namespace: str) -> str:
    for ref in (pod_obj.get("metadata") or {}).get("ownerReferences") or []:
        kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        group_version = str(ref.get("apiVersion") or "v1")
        base = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        return f"{base}/namespaces/{namespace}/{kind.lower()}s/{name}"
    return NA


def node_lines(node: NodeView, price: float | None) -> tuple[str, ...]:
    """The node's lines of each of `NODE_FAMILIES`, in that order (pure): its allocatable, what its
    pods and DaemonSet pods request and limit, its overhead, and its price when karpy owns it."""
    values = [node.name, node.provisioner or NA, _node_phase(node), "",
              *(node.labels.get(k, NA) for k in WELL_KNOWN)]  # fmt: skip
    head = labels_text((name, values[i]) for name, i in _NODE_ORDER[:_RESOURCE_AT])
    tail = labels_text((name, values[i]) for name, i in _NODE_ORDER[_RESOURCE_AT + 1 :])
    before, after = (head + ",") if head else "", ("," + tail) if tail else ""

    def lines(family: Family, amounts: Mapping[str, int]) -> str:
        return "".join(
            f'{family.name}{{{before}resource_type="{escape(resource_column(resource))}"{after}}}'
            f" {number(_value(resource, amount))}\n"
            for resource, amount in sorted(amounts.items())
        )

    totals = pod_sums(node)
    overhead = {resource: amount - node.allocatable.get(resource, 0) for resource, amount in node.capacity.items()}
    allocatable, pod_requests, pod_limits_family, daemon_requests, daemon_limits, system, priced = NODE_FAMILIES
    cost = ""
    if node.owned and price is not None:
        cost = f"{priced.name}{{{head}{',' if head and tail else ''}{tail}}} {number(price)}\n"
    return (
        lines(allocatable, node.allocatable),
        lines(pod_requests, totals[0]),
        lines(pod_limits_family, totals[1]),
        lines(daemon_requests, totals[2]),
        lines(daemon_limits, totals[3]),
        lines(system, overhead),
        cost,
    )


def pod_line(pod: PodView, host_labels: Mapping[str, str]) -> str:
    """The pod's `karpenter_pods_state` line, with the labels of the node it is on (pure)."""
    values = [pod.name, pod.namespace, _owner(pod.obj, pod.namespace), pod.node_name or NA,
              host_labels.get(L.PROVISIONER_NAME, NA), host_labels.get(L.ZONE, NA), host_labels.get(L.ARCH, NA),
              host_labels.get(L.CAPACITY_TYPE, NA), host_labels.get(L.INSTANCE_TYPE, NA), pod.phase or NA]  # fmt: skip
    return f"{PODS_STATE.name}{{{labels_text((name, values[i]) for name, i in _POD_ORDER)}}} 1.0\n"


def pod_sums(node: NodeView) -> tuple[dict[str, int], dict[str, int], dict[str, int], dict[str, int]]:
    """What the node's live pods request and limit, then what its DaemonSet pods do (pure)."""
    totals: tuple[dict[str, int], dict[str, int], dict[str, int], dict[str, int]] = ({}, {}, {}, {})
    for pod in node.pods:
        if pod.terminal or pod.request is None:
            continue
        first = 2 if pod.is_daemonset else 0
        _add(totals[first], pod.request.requests)
        _add(totals[first + 1], _limits(pod.obj))
    return totals


def _add(into: dict[str, int], amounts: Mapping[str, int]) -> None:
    for resource, amount in amounts.items():
        into[resource] = into.get(resource, 0) + amount


def _limits(pod_obj: Mapping[str, Any]) -> dict[str, int]:
    try:
        return pod_limits(pod_obj.get("spec") or {})
    except PodSpecError:  # its requests were read (or it would have no request); limits are only reported
        return {PODS: 1}


def _same(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    return all(x is y for x, y in zip(a, b, strict=True))


_EMPTY: Mapping[str, str] = {}


class Lines:
    """Each node's and pod's lines from the last `families()`, reused while the objects they were
    written from are the same ones (views are immutable; a changed object is a new view) and the
    node's price and readiness are equal; what left the snapshot is dropped. Not thread-safe."""

    def __init__(self) -> None:
        self._nodes: dict[str, tuple[tuple[object, ...], tuple[str, ...]]] = {}
        self._pods: dict[str, tuple[PodView, Mapping[str, str], str]] = {}

    def families(self, snapshot: Snapshot, prices: Mapping[PriceKey, float]) -> list[TextFamily]:
        nodes: dict[str, tuple[tuple[object, ...], tuple[str, ...]]] = {}
        for name, node in sorted(snapshot.nodes.items(), key=lambda item: item[1].name):
            price = node_price(node, prices)
            # identity for the views, equality for the values (a price read anew is a new float)
            deps = (node.obj, node.labels, node.allocatable, node.capacity, node.pods, node.ready, price)
            held = self._nodes.get(name)
            if held is not None and _same(held[0][:5], deps[:5]) and held[0][5:] == deps[5:]:
                nodes[name] = held
            else:
                nodes[name] = (deps, node_lines(node, price))
        pods: dict[str, tuple[PodView, Mapping[str, str], str]] = {}
        for key, pod in sorted(snapshot.pods.items(), key=lambda item: item[1].key):
            host = snapshot.nodes.get(pod.node_name)
            labels = host.labels if host is not None else _EMPTY
            found = self._pods.get(key)
            if found is not None and found[0] is pod and found[1] is labels:
                pods[key] = found
            else:
                pods[key] = (pod, labels, pod_line(pod, labels))
        self._nodes, self._pods = nodes, pods
        blocks = [lines for _, lines in nodes.values()]
        out = [TextFamily(f.name, f.documentation, "".join(b[i] for b in blocks)) for i, f in enumerate(NODE_FAMILIES)]
        out.append(TextFamily(PODS_STATE.name, PODS_STATE.documentation, "".join(p[2] for p in pods.values())))
        return out


def capacity_families(snapshot: Snapshot, prices: Mapping[PriceKey, float]) -> list[TextFamily]:
    """Every capacity gauge for `snapshot`, written (pure)."""
    return Lines().families(snapshot, prices)


class CapacityCollector(Collector):
    """Registered once per controller process; reads a fresh snapshot on every scrape, and keeps the
    nodes' and pods' lines between scrapes (`Lines`; one scrape writes at a time).

    `describe()` names the families without reading anything: registering would otherwise call
    `collect()`, whose prices come from the cloud — a bad credential then killed the process at
    start (issue 20, defect 5)."""

    def __init__(self, snapshot: Callable[[], Snapshot], prices: Callable[[], Mapping[PriceKey, float]]) -> None:
        self._snapshot, self._prices = snapshot, prices
        self._lines, self._lock = Lines(), threading.Lock()

    def describe(self) -> Iterator[TextFamily]:
        for family in (*NODE_FAMILIES, PODS_STATE):
            yield TextFamily(family.name, family.documentation, "")

    def collect(self) -> Iterator[TextFamily]:
        snapshot, prices = self._snapshot(), self._prices()
        with self._lock:
            families = self._lines.families(snapshot, prices)
        yield from families
