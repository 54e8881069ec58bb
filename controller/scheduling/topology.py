"""Topology: spread constraints, pod affinity and anti-affinity as counted groups (spec §5.7).

Internal to the scheduler. A `Group` is (kind, key, namespaces, selector, maxSkew, minDomains,
node filter) with a count per domain; identical constraints of many pods share one group.
Groups on `kubernetes.io/hostname` keep their counts in a numpy array indexed by the
scheduler's node index, so one pod is checked against every candidate node at once; other keys
(zone, capacity type, custom) keep a dict and are evaluated per class of node requirements.
Inverse groups carry required anti-affinity of already-bound pods and of batch pods, so a pod
also stays away from pods that are anti-affine to it.

Pods of the batch still bound to an existing node (a node being deleted: provisioning places its
pods again) are counted on that node, as kube-scheduler counts them until they are evicted, while
the pending pods are placed; then all of them are taken off their nodes together before the first
of them is placed (`lift`: termination evicts a pass's nodes at once, so their replacements see
none of them). karpy decision, issue 21 — Karpenter leaves them out of every count, so a pod
kube-scheduler refuses beside a long drain looked placeable.

Karpenter's random tie-breaks become deterministic: domains are visited in sorted order.
karpy decisions: when a node's requirement on a key is not a concrete set (e.g. zone not yet
decided), anti-affinity records every domain of the universe it allows, not none; a term with a
`namespaceSelector` counts pods of every namespace (the pure core has no namespace labels).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from controller.core.labels import CAPACITY_TYPE, HOSTNAME, ZONE
from controller.core.requirements import Requirement, Requirements
from controller.scheduling.podstate import PodState
from controller.scheduling.types import LabelSelector, PodRequest

SPREAD = "spread"
AFFINITY = "affinity"
ANTI = "anti-affinity"
MAX_SKEW_NONE = 2**31 - 1

_SHORT_KEYS = {
    ZONE: "zone",
    HOSTNAME: "hostname",
    CAPACITY_TYPE: "capacity type",
}


def short_key(key: str) -> str:
    return _SHORT_KEYS.get(key, key)


ClusterNode = tuple[Sequence[PodRequest], Mapping[str, str], str]
"""An existing node's bound pods, its labels and name."""
ClusterCounts = Callable[[Hashable, "Group"], np.ndarray]
ClusterDomains = Callable[[str], tuple[np.ndarray, Sequence[str]]]


def filter_matches(node_filter: Sequence[Requirements], requirements: Requirements) -> bool:
    """A spread's node filter (ORed terms) against a node's requirements; empty matches all."""
    return not node_filter or any(not term.intersects_errors(requirements) for term in node_filter)


class Group:
    """One counted topology constraint shared by every pod that declares it."""

    __slots__ = (
        "_sorted",
        "all_namespaces",
        "counts",
        "host",
        "host_counts",
        "id",
        "inverse",
        "key",
        "kind",
        "max_skew",
        "min_domains",
        "namespaces",
        "node_filter",
        "owner_names",
        "owners",
        "selector",
        "version",
    )

    def __init__(self, gid: int, spec: tuple[Any, ...], universe: Iterable[str], capacity: int) -> None:
        kind, key, namespaces, all_namespaces, selector, max_skew, min_domains, node_filter, inverse = spec
        self.id = gid
        self.kind: str = kind
        self.key: str = key
        self.namespaces: frozenset[str] = namespaces
        self.all_namespaces: bool = all_namespaces
        self.selector: LabelSelector | None = selector
        self.max_skew: int = max_skew
        self.min_domains: int | None = min_domains
        self.node_filter: tuple[Requirements, ...] = node_filter
        self.inverse: bool = inverse
        self.host = key == HOSTNAME
        self.counts: dict[str, int] = {} if self.host else dict.fromkeys(universe, 0)
        self.host_counts = np.zeros(capacity if self.host else 0, dtype=np.int64)
        self.owners: set[int] = set()
        self.owner_names: list[str] = []
        self.version = 0  # bumped whenever a count changes
        self._sorted: list[str] | None = None

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        if self.selector is None:
            return False
        if not self.all_namespaces and namespace not in self.namespaces:
            return False
        return self.selector.matches(labels)

    def domains(self) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self.counts)
        return self._sorted

    def add(self, domain: str, amount: int = 1) -> None:
        self.version += 1
        if domain not in self.counts:
            self._sorted = None
        self.counts[domain] = self.counts.get(domain, 0) + amount

    def describe(self) -> str:
        """A sentence naming the constraint, for unschedulable reasons."""
        where = short_key(self.key)
        selector = str(self.selector) if self.selector is not None else "<none>"
        if self.kind == SPREAD:
            return f"topology spread on {where}: maxSkew {self.max_skew} would be exceeded"
        if self.kind == AFFINITY:
            return f"pod affinity on {where}: no {where} allowed for the pod has a pod matching {selector}"
        if self.inverse:
            owner = self.owner_names[0] if self.owner_names else "another pod"
            return (
                f"pod anti-affinity of {owner} on {where}: every allowed {where} already has "
                f"a pod it repels (matching {selector})"
            )
        return f"pod anti-affinity on {where}: every allowed {where} already has a pod matching {selector}"


class Topology:
    """All topology groups of one solve and their counts."""

    def __init__(self, universe: Callable[[str], set[str]], capacity: int) -> None:
        self._universe = universe
        self._capacity = capacity
        self.groups: list[Group] = []
        self._by_spec: dict[tuple[Any, ...], Group] = {}
        self._owned: dict[int, list[Group]] = {}
        self._owned_inverse: dict[int, list[Group]] = {}
        self._selecting: dict[tuple[Any, ...], list[Group]] = {}
        self._inverse_selecting: dict[tuple[Any, ...], list[Group]] = {}
        self._cluster: Sequence[ClusterNode] = ()
        self._cluster_counts: ClusterCounts | None = None
        self._cluster_domains: ClusterDomains | None = None
        self._moving: dict[str, int] = {}  # batch pod key → the existing node it is still counted on
        self._moving_states: list[PodState] = []  # those pods' states, once `update` has seen them
        self._lifted: list[tuple[PodRequest, int]] = []  # moving pods taken off, and the node each left

    # -- set-up ------------------------------------------------------------------------------

    def add_cluster_nodes(
        self,
        nodes: Sequence[ClusterNode],
        anti: Sequence[int],
        counts: ClusterCounts,
        domains: ClusterDomains,
        moving: Mapping[str, int] | None = None,
    ) -> None:
        """The pods bound to the existing nodes before this solve, the nodes in row order (the
        existing nodes are the table's first rows): counted by groups; inverse groups made for
        those with required anti-affinity (`anti`: the rows holding such pods, in order).
        `counts(key, group)`: per node, how many of its pods the group selects (0 where its node
        filter excludes the node); `domains(label)`: per node, the index of its value of that
        label in the list returned with them (-1: none) — `existing.py` keeps both. `moving`:
        the batch pods among them (key → node), counted there until `lift`."""
        assert not self._cluster, "the existing nodes are added once"
        self._cluster = nodes
        self._cluster_counts = counts
        self._cluster_domains = domains
        self._moving = dict(moving or {})
        for node_index in anti:
            pods, node_labels, node_name = nodes[node_index]
            for pod in pods:
                for group in self._groups_of_cluster_pod(pod):
                    group.owner_names.append(pod.key)
                    requirement = self._node_requirement(group.key, node_labels, node_name)
                    self._record_node(group, node_index, requirement, True)

    def _groups_of_cluster_pod(self, pod: PodRequest) -> list[Group]:
        out = []
        for term in pod.pod_anti_affinity:
            spec = (ANTI, term.topology_key, term.namespaces, term.namespace_selector is not None, term.selector,
                    MAX_SKEW_NONE, None, (), True)  # fmt: skip
            out.append(self._group(spec))
        return out

    def grow(self, capacity: int) -> None:
        if capacity <= self._capacity:
            return
        for group in self.groups:
            if group.host and group.host_counts.shape[0] < capacity:
                grown = np.zeros(capacity, dtype=np.int64)
                grown[: group.host_counts.shape[0]] = group.host_counts
                group.host_counts = grown
        self._capacity = capacity

    def _group(self, spec: tuple[Any, ...]) -> Group:
        # a node filter's `Requirements` are mappings (unhashable): the key holds their values
        node_filter: tuple[Requirements, ...] = spec[7]
        key = (*spec[:7], tuple(frozenset(f.values()) for f in node_filter), spec[8]) if node_filter else spec
        group = self._by_spec.get(key)
        if group is not None:
            return group
        group = Group(len(self.groups), spec, () if spec[1] == HOSTNAME else self._universe(spec[1]), self._capacity)
        self.groups.append(group)
        self._by_spec[key] = group
        self._selecting.clear()
        self._inverse_selecting.clear()
        if not group.inverse and self._cluster_counts is not None and self._cluster_domains is not None:
            per_node = self._cluster_counts(key, group)
            if group.host:
                group.host_counts[: len(per_node)] += per_node
            else:
                codes, values = self._cluster_domains(group.key)
                labelled = codes >= 0
                totals = np.bincount(codes[labelled], weights=per_node[labelled], minlength=len(values))
                for d in np.flatnonzero(totals).tolist():
                    group.add(values[d], int(totals[d]))
            for pod, node_index in self._lifted:  # counted by `counts` where they no longer are
                if group.selects(pod.namespace, pod.labels):
                    self._uncount(group, node_index)
        return group

    def update(self, ps: PodState, first: bool = False) -> None:
        """(Re)compute the groups a pod owns from its current constraints."""
        pod = ps.pod
        if first and self._moving and pod.key in self._moving:
            self._moving_states.append(ps)
        if first and not (ps.spread or pod.pod_affinity or ps.preferred_affinity or pod.pod_anti_affinity
                          or ps.preferred_anti):  # fmt: skip
            return  # owns nothing (most pods)
        for group in self._owned.get(ps.index, ()):
            group.owners.discard(ps.index)
        pod = ps.pod
        owned = []
        node_filter = ps.node_filter() if ps.spread else ()
        for c in ps.spread:
            spec = (SPREAD, c.topology_key, frozenset({pod.namespace}), False, c.selector, c.max_skew, c.min_domains,
                    node_filter, False)  # fmt: skip
            owned.append(self._group(spec))
        for kind, terms in ((AFFINITY, ps.affinity_terms()), (ANTI, ps.anti_affinity_terms())):
            for t in terms:
                spec = (kind, t.topology_key, t.namespaces, t.namespace_selector is not None, t.selector,
                        MAX_SKEW_NONE, None, (), False)  # fmt: skip
                owned.append(self._group(spec))
        for group in owned:
            group.owners.add(ps.index)
        self._owned[ps.index] = owned
        if first and pod.pod_anti_affinity:
            inverse = []
            for t in pod.pod_anti_affinity:
                spec = (ANTI, t.topology_key, t.namespaces, t.namespace_selector is not None, t.selector,
                        MAX_SKEW_NONE, None, (), True)  # fmt: skip
                group = self._group(spec)
                group.owners.add(ps.index)
                group.owner_names.append(pod.key)
                inverse.append(group)
            self._owned_inverse[ps.index] = inverse

    def moving(self, key: str) -> bool:
        """Whether the batch pod is still counted on the existing node it is bound to."""
        return key in self._moving

    def lift(self) -> bool:
        """Take every moving pod off the node it is still counted on, before the first of them is
        placed (their nodes are drained together: each replacement sees none of them); False if
        there were none left."""
        if not self._moving:
            return False
        for ps in self._moving_states:
            node_index = self._moving[ps.pod.key]
            self._lifted.append((ps.pod, node_index))
            for group in self.counting(ps):
                self._uncount(group, node_index)
            _, labels, name = self._cluster[node_index]
            for group in self._owned_inverse.get(ps.index, ()):
                self._record_node(group, node_index, self._node_requirement(group.key, labels, name), True, -1)
        self._moving.clear()
        self._moving_states.clear()
        return True

    def _uncount(self, group: Group, node_index: int) -> None:
        """One selected pod fewer on an existing node, as `add_cluster_nodes` counted it."""
        _, labels, _ = self._cluster[node_index]
        if group.node_filter and not filter_matches(group.node_filter, Requirements.from_labels(labels)):
            return
        if group.host:
            group.version += 1
            group.host_counts[node_index] -= 1
        elif group.key in labels:
            group.add(labels[group.key], -1)

    # -- queries -------------------------------------------------------------------------------

    def _inverse(self, ps: PodState) -> list[Group]:
        inverse = self._inverse_selecting.get(ps.selector_key)
        if inverse is None:
            namespace, labels = ps.pod.namespace, ps.pod.labels
            inverse = [g for g in self.groups if g.inverse and g.selects(namespace, labels)]
            self._inverse_selecting[ps.selector_key] = inverse
        return inverse

    def constraining(self, ps: PodState) -> list[Group]:
        """Groups the pod owns plus inverse groups that select it (spec §5.7)."""
        return [*self._owned.get(ps.index, ()), *self._inverse(ps)]

    def involves(self, ps: PodState) -> bool:
        """Whether any group constrains or counts the pod (`constraining` or `counting` non-empty)."""
        return bool(self._owned.get(ps.index)) or bool(self._inverse(ps)) or bool(self.counting(ps))

    def counting(self, ps: PodState) -> list[Group]:
        """Groups (not inverse) whose selector counts this pod."""
        groups = self._selecting.get(ps.selector_key)
        if groups is None:
            namespace, labels = ps.pod.namespace, ps.pod.labels
            groups = [g for g in self.groups if not g.inverse and g.selects(namespace, labels)]
            self._selecting[ps.selector_key] = groups
        return groups

    def next_domains(
        self, group: Group, ps: PodState, pod_domains: Requirement, node_domains: Requirement
    ) -> Requirement:
        """The domains a node may take for this group (non-hostname keys), as an `In` requirement."""
        counts = group.counts
        if group.kind == SPREAD:
            self_count = 1 if group.selects(ps.pod.namespace, ps.pod.labels) else 0
            supported = [counts[d] for d in group.domains() if pod_domains.has(d)]
            low = min(supported) if supported else MAX_SKEW_NONE
            if group.min_domains is not None and len(supported) < group.min_domains:
                low = 0
            best, best_count = None, MAX_SKEW_NONE
            for domain in group.domains():
                if node_domains.has(domain):
                    count = counts[domain] + self_count
                    if count - low <= group.max_skew and count < best_count:
                        best, best_count = domain, count
            return Requirement(group.key, False, frozenset() if best is None else frozenset({best}))
        if group.kind == AFFINITY:
            options = {d for d in group.domains() if counts[d] > 0 and pod_domains.has(d)}
            # the first of a self-affine group (no matching pod in any domain, as kube-scheduler's
            # InterPodAffinity asks) opens one domain
            if not options and not any(counts.values()) and group.selects(ps.pod.namespace, ps.pod.labels):
                both = pod_domains.intersection(node_domains)
                options.update(next(([d] for d in group.domains() if both.has(d)), []))
                options.update(next(([d] for d in group.domains() if pod_domains.has(d)), []))
            return Requirement(group.key, False, frozenset(options))
        return Requirement(
            group.key, False, frozenset(d for d in group.domains() if counts[d] == 0 and pod_domains.has(d))
        )

    def all_domains(self, groups: Sequence[Group], ps: PodState, node: Requirements) -> list[tuple[Group, Requirement]]:
        """`next_domains` of each zone-like group for a node with requirements `node`: the pod
        affinity groups last, each offered only the domains the other groups left — the first pod
        of a self-affine group may go wherever kube-scheduler would put it (any node its other
        constraints allow), so the one domain it opens is taken among those, not before them."""
        out: list[tuple[Group, Requirement]] = []
        later: list[Group] = []
        for group in groups:
            if group.kind == AFFINITY:
                later.append(group)
            else:
                pod_domains, node_domains = ps.requirements.get_or_exists(group.key), node.get_or_exists(group.key)
                out.append((group, self.next_domains(group, ps, pod_domains, node_domains)))
        for group in later:
            allowed = node.get_or_exists(group.key)
            for _, domains in out:
                if domains.key == group.key:
                    allowed = allowed.intersection(domains)
            out.append((group, self.next_domains(group, ps, ps.requirements.get_or_exists(group.key), allowed)))
        return out

    def host_mask(self, group: Group, ps: PodState, n: int) -> np.ndarray:
        """Which of the first `n` nodes this hostname group allows for the pod."""
        counts = group.host_counts[:n]
        if group.kind == SPREAD:
            self_count = 1 if group.selects(ps.pod.namespace, ps.pod.labels) else 0
            return np.asarray(counts + self_count <= group.max_skew)
        if group.kind == AFFINITY:
            present = counts > 0
            if present.any():
                return np.asarray(present)
            return np.full(n, group.selects(ps.pod.namespace, ps.pod.labels))
        return np.asarray(counts == 0)

    def host_allows_new(self, group: Group, ps: PodState, n: int) -> bool:
        """Whether a brand-new node (no pods yet) satisfies this hostname group."""
        if group.kind == AFFINITY:
            return not bool((group.host_counts[:n] > 0).any()) and group.selects(ps.pod.namespace, ps.pod.labels)
        if group.kind == SPREAD:
            return (1 if group.selects(ps.pod.namespace, ps.pod.labels) else 0) <= group.max_skew
        return True

    # -- recording -----------------------------------------------------------------------------

    def record(self, ps: PodState, node_index: int, requirements: Requirements) -> None:
        """Count a placed pod in every group that counts it, and its own inverse groups."""
        for group in self.counting(ps):
            if group.kind == SPREAD and not filter_matches(group.node_filter, requirements):
                continue
            self._record_node(group, node_index, requirements.get_or_exists(group.key), group.kind == ANTI)
        for group in self._owned_inverse.get(ps.index, ()):
            self._record_node(group, node_index, requirements.get_or_exists(group.key), True)

    def _record_node(self, group: Group, node_index: int, req: Requirement, every: bool, amount: int = 1) -> None:
        if group.host:
            group.host_counts[node_index] += amount
            return
        if not req.complement:
            if every or len(req.values) == 1:
                for value in req.values:
                    group.add(value, amount)
        elif every:
            for domain in group.domains():
                if req.has(domain):
                    group.add(domain, amount)

    def _node_requirement(self, key: str, labels: Mapping[str, str], name: str) -> Requirement:
        if key == HOSTNAME:
            return Requirement(key, False, frozenset({labels.get(key, name)}))
        if key in labels:
            return Requirement(key, False, frozenset({labels[key]}))
        return Requirement(key, False)
