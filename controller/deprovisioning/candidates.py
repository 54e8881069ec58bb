"""Which nodes may be disrupted, why some may not, and in which order (spec §6.2).

Pure. `candidates()` builds a `Candidate` for every owned node that is eligible at all (labelled,
its provisioner and instance type known, initialized, not nominated, not being deleted) and that
a method's predicate accepts. `filter_candidates()` drops nodes whose pods cannot be evicted now
(a PDB allowing no disruption, a `do-not-evict` pod) and says why, as `DeprovisioningBlocked`
events. `disruption_cost()` orders consolidation candidates. Neighbours: `types.py` (inputs), the
methods (`expiration.py`, `emptiness.py`, the consolidations).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable

from controller.apis.provisioner import Provisioner
from controller.core import labels as L
from controller.core.labels import POD_DELETION_COST
from controller.deprovisioning.events import blocked
from controller.deprovisioning.types import Candidate, Event, Inputs
from controller.state.snapshot import NodeView, PodView


def new_candidate(node: NodeView, inputs: Inputs) -> Candidate | None:
    """The candidate view of `node`, or None when it is not a candidate at all (spec §6.2)."""
    labels = node.labels
    capacity_type, zone = labels.get(L.CAPACITY_TYPE), labels.get(L.ZONE)
    prov_name, type_name = labels.get(L.PROVISIONER_NAME), labels.get(L.INSTANCE_TYPE)
    if not (capacity_type and zone and prov_name):
        return None
    provisioner = inputs.provisioners.get(prov_name)
    if provisioner is None:
        return None
    instance_type = next((it for it in inputs.instance_types.get(prov_name, ()) if it.name == type_name), None)
    if instance_type is None:
        return None
    if node.marked_for_deletion or not node.initialized or node.nominated:
        return None
    offering = next((o for o in instance_type.offerings if o.zone == zone and o.capacity_type == capacity_type), None)
    return Candidate(
        node=node,
        provisioner=provisioner,
        instance_type=instance_type,
        capacity_type=capacity_type,
        zone=zone,
        offering=offering,
        disruption_cost=disruption_cost(node, provisioner, inputs.now),
    )


def candidates(inputs: Inputs, should: Callable[[Candidate], bool]) -> list[Candidate]:
    """Every candidate accepted by `should`, oldest first (then by name)."""
    out = []
    for node in sorted(inputs.nodes, key=lambda n: (n.created, n.name)):
        cand = new_candidate(node, inputs)
        if cand is not None and should(cand):
            out.append(cand)
    return out


def blocked_reason(cand: Candidate, inputs: Inputs) -> str | None:
    """Why `cand` cannot be disrupted now (None when it can), spec §6.2 filterCandidates."""
    if cand.node.deleting:
        return "in the process of deletion"
    for pod in cand.pods:
        for pdb in inputs.pdbs:
            if pdb.disruptions_allowed <= 0 and pdb.matches(pod):
                return f"pdb {pdb.namespace}/{pdb.name} prevents pod evictions"
    for pod in cand.pods:
        if pod.do_not_evict:
            return f"pod {pod.key} has do not evict annotation"
    return None


def filter_candidates(cands: Iterable[Candidate], inputs: Inputs) -> tuple[list[Candidate], list[Event]]:
    """The candidates that can be disrupted now, and a `DeprovisioningBlocked` event per other one."""
    kept: list[Candidate] = []
    events: list[Event] = []
    for cand in cands:
        why = blocked_reason(cand, inputs)
        if why is None:
            kept.append(cand)
        else:
            events.append(blocked(cand.name, why))
    return kept, events


def eviction_cost(pod: PodView) -> float:
    """A pod's share of its node's disruption cost: clamp(1 + deletionCost/2^27 + priority/2^25, ±10)."""
    try:
        deletion_cost = float(pod.annotations.get(POD_DELETION_COST, "0"))
    except ValueError:
        deletion_cost = 0.0
    cost = 1.0 + deletion_cost / 2**27 + pod.priority / 2**25
    return max(-10.0, min(10.0, cost))


def lifetime_remaining(node: NodeView, provisioner: Provisioner, now: float) -> float:
    """Fraction of `ttlSecondsUntilExpired` still ahead of the node, in [0, 1] (1 without a TTL)."""
    ttl = provisioner.ttl_seconds_until_expired
    if not ttl:
        return 1.0
    age = now - node.created
    return max(0.0, min(1.0, (ttl - age) / ttl))


def disruption_cost(node: NodeView, provisioner: Provisioner, now: float) -> float:
    """Σ clamp(1 + deletionCost/2^27 + priority/2^25, ±10) over the pods × lifetime remaining (spec §6.2)."""
    return _eviction_costs(node) * lifetime_remaining(node, provisioner, now)


_EVICTION_COSTS: weakref.WeakKeyDictionary[NodeView, float] = weakref.WeakKeyDictionary()


def _eviction_costs(node: NodeView) -> float:
    """The node's pods' summed eviction costs, once per view: views are immutable, and a node that
    did not change keeps its view from snapshot to snapshot (every pass costs every node)."""
    found = _EVICTION_COSTS.get(node)
    if found is None:
        found = _EVICTION_COSTS[node] = sum(eviction_cost(p) for p in node.movable_pods())
    return found


def by_disruption_cost(cands: Iterable[Candidate]) -> list[Candidate]:
    """Cheapest to disrupt first; ties by creation time then name (karpy's deterministic order)."""
    return sorted(cands, key=lambda c: (c.disruption_cost, c.node.created, c.name))


def expiration_time(cand: Candidate) -> float | None:
    ttl = cand.provisioner.ttl_seconds_until_expired
    return None if ttl is None else cand.node.created + ttl
