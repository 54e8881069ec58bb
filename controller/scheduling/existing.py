"""The existing nodes of a solve as table rows: set up once, reused by every solve over a subset.

Internal to the scheduler; pure. A solve starts with one row per existing node (spec §5.5.1), in
creation-time-then-name order: its class (taints, label requirements), what its bound pods use
plus the DaemonSet pods a node that takes pods still lacks, what it offers, its pod count, host
ports, and its bound pods and labels for topology — with the pods of the batch still bound to it
(a node being deleted whose pods are placed again), which topology counts where they are until
the solve places them, as kube-scheduler counts them until they are evicted (issue 21).
`Rows.build` computes them for a node list.

A deprovisioning pass simulates hundreds of node sets, each its remaining nodes less a candidate
or a prefix of candidates; setting up every node again made one simulation cost ~0.12 s at
1,000 nodes / 20,000 pods. So for a `NodeSource` (`types.py`: the nodes a run of solves draws
from) the rows of all its nodes are built once per solve context (resource list, provisioners,
their type tables, DaemonSets; `_ROWS`: a cache of a pure function, not state), and a solve
whose nodes are the source's own objects takes their rows by index (`rows_for`). Likewise for
topology: how many bound pods of each node a group (a spread, affinity or anti-affinity
selector) counts, and each node's domain of a topology key, are kept per source once a solve
asked (`Rows.group_counts`, `Rows.label_domains`), and a solve takes its nodes' by index. The
rows of a subset are the same values, in the same order, as the subset's own set-up, and
`install` is the one way rows enter a solve, so the results are the same (checked solve by solve
over random fleets in `tests/controller/scheduling/test_existing.py`).
The source is not used — the subset is set up alone — when a node is not the source's own
object or one of its bound pods is in the batch (its usage then leaves that pod out); nodes that
`volumes.py` gives attach limits are drawn from a source of the same nodes with limits.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from controller.core.labels import HOSTNAME
from controller.core.requirements import Requirements
from controller.core.taints import Taint, first_untolerated, is_ephemeral
from controller.scheduling.nodetable import NodeTable
from controller.scheduling.topology import ClusterNode, Group, Topology, filter_matches
from controller.scheduling.types import HostPort, NodeSource, PodRequest, ProvisionerSpec, SchedulingInput, StateNode
from controller.scheduling.typetable import TypeTable

Daemons = Sequence[tuple[PodRequest, Requirements]]


@dataclass(frozen=True, eq=False)
class Context:
    """What a solve's rows depend on besides the nodes (the solver's own set-up)."""

    resources: tuple[str, ...]
    provisioners: tuple[ProvisionerSpec, ...]  # by weight
    tables: tuple[TypeTable, ...]  # per provisioner
    daemonsets: Sequence[PodRequest]  # the input's, as given
    daemons: Daemons  # with their requirements

    def key(self) -> tuple[object, ...]:
        ids = (*map(id, self.provisioners), -1, *map(id, self.tables), -1, id(self.daemonsets))
        return (self.resources, *ids)

    def same(self, other: Context) -> bool:
        return (
            self.resources == other.resources
            and len(self.provisioners) == len(other.provisioners)
            and all(a is b for a, b in zip(self.provisioners, other.provisioners, strict=True))
            and len(self.tables) == len(other.tables)
            and all(a is b for a, b in zip(self.tables, other.tables, strict=True))
            and self.daemonsets is other.daemonsets
        )

    def vector(self, resources: Mapping[str, int]) -> np.ndarray:
        return np.array([resources.get(r, 0) for r in self.resources], dtype=np.int64)

    def daemons_for(self, taints: Sequence[Taint], requirements: Requirements) -> np.ndarray:
        """The summed requests of the DaemonSet pods a node with these taints and requirements runs."""
        total = np.zeros(len(self.resources), dtype=np.int64)
        for daemon, reqs in self.daemons:
            if first_untolerated(daemon.tolerations, taints) is None and requirements.compatible(reqs):
                total += self.vector(daemon.requests)
        return total

    def effective_taints(self, node: StateNode, prov: int | None) -> tuple[Taint, ...]:
        startup = set(self.provisioners[prov].startup_taints) if prov is not None and not node.initialized else set()
        return tuple(t for t in node.taints if not is_ephemeral(t) and t not in startup)

    def allocatable(self, node: StateNode, prov: int | None) -> Mapping[str, int]:
        """What a node offers; an uninitialized node's zero values come from its instance type (§5.5.1)."""
        if prov is None or node.initialized:
            return node.allocatable
        expected = next((it for it in self.tables[prov].types if it.name == node.instance_type_name), None)
        if expected is None:
            return node.allocatable
        return {**expected.allocatable, **{k: v for k, v in node.allocatable.items() if v}}


ClassKey = tuple[tuple[Taint, ...], frozenset[object]]


@dataclass(frozen=True, eq=False)
class Rows:
    """Existing nodes as rows, in solve order; `cls[i]` indexes `classes` (first seen first)."""

    nodes: tuple[StateNode, ...]
    used: np.ndarray  # (n, resources): bound pods that stay, plus missing DaemonSet pods on target nodes
    offers: np.ndarray  # (n, resources)
    npods: np.ndarray  # (n,)
    target: np.ndarray  # (n,) bool: takes pods (has a provisioner, not marked for deletion)
    cls: np.ndarray  # (n,)
    classes: tuple[tuple[tuple[Taint, ...], Requirements], ...]
    ports: tuple[frozenset[HostPort], ...]
    cluster: tuple[ClusterNode, ...]  # bound pods that stay and `moving` pods (topology counts them), labels, name
    anti: frozenset[int]  # rows holding a bound pod with required anti-affinity
    pod_rows: Mapping[str, int]  # bound pod key → row
    moving: Mapping[str, int] = field(default_factory=dict)
    """Batch pod key → the row it is still bound to (a pod of a node being deleted, which the solve
    places again): topology counts it there until the solve places such pods (`Topology.lift`),
    as kube-scheduler counts it until it is evicted."""
    group_counts: dict[Hashable, np.ndarray] = field(default_factory=dict)
    """Per topology group key: `selected(group)` (a cache, filled by solves)."""
    label_domains: dict[str, tuple[np.ndarray, list[str]]] = field(default_factory=dict)
    """Per label: `domains(label)` (a cache, filled by solves)."""

    def domains(self, label: str) -> tuple[np.ndarray, list[str]]:
        """Per row, the index of the node's value of `label` in the list returned with them (-1: the
        node has no such label)."""
        found = self.label_domains.get(label)
        if found is None:
            index: dict[str, int] = {}
            codes = [index.setdefault(v, len(index)) if (v := node.labels.get(label)) is not None else -1
                     for node in self.nodes]  # fmt: skip
            found = self.label_domains[label] = (np.array(codes, dtype=np.int64), list(index))
        return found

    def selected(self, group: Group) -> np.ndarray:
        """Per row, how many of its bound pods `group` selects; 0 where its node filter excludes
        the node. A selector reads a pod's namespace and labels only: it is asked once per
        distinct pair (`_by_labels`), not once per pod."""
        pairs, rows, which, counts = self._by_labels
        chosen = np.array([group.selects(namespace, labels) for namespace, labels in pairs], dtype=bool)
        hit = chosen[which]
        out = np.bincount(rows[hit], weights=counts[hit], minlength=len(self.nodes)).astype(np.int64)
        if group.node_filter:
            for i in np.flatnonzero(out).tolist():
                if not filter_matches(group.node_filter, Requirements.from_labels(self.nodes[i].labels)):
                    out[i] = 0
        return out

    @cached_property
    def _by_labels(self) -> tuple[list[tuple[str, Mapping[str, str]]], np.ndarray, np.ndarray, np.ndarray]:
        """The bound pods' distinct (namespace, labels) pairs, and per (row, pair) present: the
        row, the pair and how many of the row's pods have it."""
        index: dict[tuple[str, frozenset[tuple[str, str]]], int] = {}
        pairs: list[tuple[str, Mapping[str, str]]] = []
        rows, which, counts = [], [], []
        for i, (pods, _, _) in enumerate(self.cluster):
            here: dict[int, int] = {}
            for pod in pods:
                key = (pod.namespace, frozenset(pod.labels.items()))
                k = index.get(key)
                if k is None:
                    k = index[key] = len(pairs)
                    pairs.append((pod.namespace, pod.labels))
                here[k] = here.get(k, 0) + 1
            for k, count in here.items():
                rows.append(i)
                which.append(k)
                counts.append(count)
        as_ints = np.array(rows, dtype=np.int64), np.array(which, dtype=np.int64), np.array(counts, dtype=np.int64)
        return pairs, *as_ints

    @staticmethod
    def build(nodes: Sequence[StateNode], context: Context, batch_keys: set[str]) -> Rows:
        """`nodes` (already in solve order) set up for `context`, leaving out bound pods in the batch."""
        by_name = {p.name: i for i, p in enumerate(context.provisioners)}
        n, width = len(nodes), len(context.resources)
        used = np.zeros((n, width), dtype=np.int64)
        offers = np.zeros((n, width), dtype=np.int64)
        npods = np.zeros(n, dtype=np.int64)
        target = np.zeros(n, dtype=bool)
        cls = np.zeros(n, dtype=np.int64)
        class_index: dict[ClassKey, int] = {}
        classes: list[tuple[tuple[Taint, ...], Requirements]] = []
        ports: list[frozenset[HostPort]] = []
        cluster: list[ClusterNode] = []
        anti: set[int] = set()
        pod_rows: dict[str, int] = {}
        moving: dict[str, int] = {}
        for i, node in enumerate(nodes):
            prov = by_name.get(node.provisioner_name or "")
            target[i] = node.provisioner_name is not None and not node.marked_for_deletion
            taints = context.effective_taints(node, prov)
            labels = node.labels
            reqs = Requirements.from_labels({k: v for k, v in labels.items() if k != HOSTNAME})
            key = (taints, frozenset(reqs.values()))
            found = class_index.get(key)
            if found is None:
                found = class_index[key] = len(classes)
                classes.append((taints, reqs))
            cls[i] = found
            bound, row, bound_daemons = _bound_usage(node, context, batch_keys)
            if target[i]:
                full = Requirements.from_labels({**labels, HOSTNAME: labels.get(HOSTNAME, node.name)})
                row += np.maximum(context.daemons_for(taints, full) - bound_daemons, 0)
            used[i] = row
            offers[i] = context.vector(context.allocatable(node, prov))
            npods[i] = len(bound)
            ports.append(frozenset(port for pod in bound for port in pod.host_ports))
            leaving = [p for p in node.pods if not p.terminal and p.key in batch_keys] if batch_keys else []
            counted = (*bound, *leaving)
            cluster.append((counted, labels, node.name))
            if any(pod.pod_anti_affinity for pod in counted):
                anti.add(i)
            for pod in bound:
                pod_rows[pod.key] = i
            for pod in leaving:
                moving[pod.key] = i
        return Rows(tuple(nodes), used, offers, npods, target, cls, tuple(classes), tuple(ports), tuple(cluster),
                    frozenset(anti), pod_rows, moving)  # fmt: skip


def solve_order(nodes: Sequence[StateNode]) -> list[StateNode]:
    """Existing nodes as a solve visits them: creation time, then name (spec §5.5 step 1)."""
    return sorted(nodes, key=lambda n: (n.creation_timestamp, n.name))


_ROWS: weakref.WeakKeyDictionary[NodeSource, dict[tuple[object, ...], tuple[Context, Rows, dict[int, int]]]] = (
    weakref.WeakKeyDictionary()
)
"""Per source and solve context: the rows of all its nodes and each node's row (by id)."""
_CONTEXTS_PER_SOURCE = 4


def rows_for(inp: SchedulingInput, context: Context, batch_keys: set[str]) -> tuple[Rows, np.ndarray]:
    """The rows of `inp.nodes` and which of them the solve takes, in solve order: from the
    input's source when it covers them (see the module docstring), else built for these nodes."""
    source = inp.node_source
    if source is not None and inp.nodes:
        taken = _from_source(source, inp.nodes, context, batch_keys)
        if taken is not None:
            return taken
    rows = Rows.build(solve_order(inp.nodes), context, batch_keys)
    return rows, np.arange(len(rows.nodes))


def _from_source(
    source: NodeSource, nodes: Sequence[StateNode], context: Context, batch_keys: set[str]
) -> tuple[Rows, np.ndarray] | None:
    memo = _ROWS.setdefault(source, {})
    key = context.key()
    found = memo.get(key)
    if found is None or not found[0].same(context):
        if len(memo) >= _CONTEXTS_PER_SOURCE:
            memo.clear()
        ordered = solve_order(source.nodes)
        if len({n.name for n in ordered}) != len(ordered):
            return None  # names must tell the source's order apart
        rows = Rows.build(ordered, context, set())
        found = memo[key] = (context, rows, {id(n): i for i, n in enumerate(ordered)})
    _, rows, index = found
    picked = [index.get(id(n), -1) for n in nodes]
    if -1 in picked:
        return None
    idx = np.unique(np.array(picked, dtype=np.int64))  # the source's rows are in solve order
    if len(idx) != len(picked):
        return None  # a node given twice
    if batch_keys:
        chosen = np.zeros(len(rows.nodes), dtype=bool)
        chosen[idx] = True
        if any(chosen[rows.pod_rows[k]] for k in batch_keys if k in rows.pod_rows):
            return None
    return rows, idx


def install(table: NodeTable, topology: Topology, rows: Rows, idx: np.ndarray) -> None:
    """Rows `idx` of `rows` (in that order) become the solve's existing nodes and cluster pods."""
    sub = rows.cls[idx]
    _, first = np.unique(sub, return_index=True)
    mapping = np.zeros(len(rows.classes), dtype=np.int64)
    for k in sorted(first.tolist()):  # classes in the order the nodes first show them
        c = int(sub[k])
        taints, reqs = rows.classes[c]
        mapping[c] = table.node_class(-1, taints, reqs).id
    picked = idx.tolist()
    table.add_existing(
        [rows.nodes[i] for i in picked], mapping[sub], rows.used[idx], rows.offers[idx], rows.npods[idx],
        rows.target[idx], [rows.ports[i] for i in picked],
    )  # fmt: skip
    cluster = rows.cluster
    anti = [k for k, i in enumerate(picked) if i in rows.anti] if rows.anti else []

    def counts(key: Hashable, group: Group) -> np.ndarray:
        found = rows.group_counts.get(key)
        if found is None:  # over every row, kept for the next solve over these rows
            found = rows.group_counts[key] = rows.selected(group)
        return np.asarray(found[idx])

    def domains(label: str) -> tuple[np.ndarray, list[str]]:
        codes, values = rows.domains(label)
        return np.asarray(codes[idx]), values

    moving = {}
    if rows.moving:
        position = {i: k for k, i in enumerate(picked)}
        moving = {key: position[i] for key, i in rows.moving.items() if i in position}
    topology.add_cluster_nodes([cluster[i] for i in picked], anti, counts, domains, moving)


def _bound_usage(
    node: StateNode, context: Context, batch_keys: set[str]
) -> tuple[list[PodRequest], np.ndarray, np.ndarray]:
    """The node's bound pods that stay (not terminal, not in the batch), their summed requests
    and those of its DaemonSet pods."""
    bound = [p for p in node.pods if not p.terminal and p.key not in batch_keys]
    used = np.zeros(len(context.resources), dtype=np.int64)
    daemons = np.zeros(len(context.resources), dtype=np.int64)
    for pod in bound:
        vector = context.vector(pod.requests)
        used += vector
        if pod.owner_kind == "DaemonSet":
            daemons += vector
    return bound, used, daemons
