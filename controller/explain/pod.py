"""What karpy would do for one pod (or a few) now: the `explain pod` and `what-if` answers.

Pure, apart from calling the injected scheduler (itself pure). `place()` runs the scheduler as
provisioning does — every provisioner, the existing nodes — and says where each pod would go, what
would launch (type, zone, capacity type, price, the other types that fit) and why a pod fits
nowhere. `per_provisioner()` asks each provisioner alone what new node it would launch for one
pod, or its reason with the numbers (the scheduler's own clause, `scheduling/reasons.py`); the
existing nodes still count for limits and topology but take no pod (an untolerated taint), so
the answer is about that provisioner's new capacity. Neighbours: `node.py`, `service.py`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.core.taints import Taint
from controller.deprovisioning.types import Scheduler
from controller.explain.node import new_node_json
from controller.scheduling.instancetypes import allowed_offerings
from controller.scheduling.types import NewNode, PodRequest, SchedulingInput, SchedulingSettings, StateNode

EXPLAIN_TAINT = Taint("karpy.sh/explain-no-room", "", "NoSchedule")
"""Keeps the existing nodes out of a per-provisioner question (no pod tolerates it)."""
MAX_FITTING = 10


@dataclass(frozen=True)
class ProvisioningView:
    """The cluster as provisioning would see it (`base`: built by `state/schedulinginput.py`, its
    pods replaced by the ones asked about) and why a provisioner has no instance types."""

    base: SchedulingInput
    missing: Mapping[str, str] = dataclasses.field(default_factory=dict)


def fitting_types(node: NewNode) -> list[dict[str, Any]]:
    """The instance types a new node may launch as, with their cheapest allowed price."""
    out = []
    for it in node.instance_type_options[:MAX_FITTING]:
        prices = [o.price for o in allowed_offerings(it, node.requirements)]
        out.append({"instanceType": it.name, "pricePerHour": min(prices) if prices else None})
    return out


def place(world: ProvisioningView, pods: Sequence[PodRequest], scheduler: Scheduler) -> dict[str, Any]:
    """Where `pods` would go on the cluster as it is, and what would launch for them."""
    result = scheduler(dataclasses.replace(world.base, pods=list(pods)))
    keys = {p.key for p in pods}
    destinations: dict[str, dict[str, Any]] = {}
    for name, assigned in result.existing_assignments.items():
        destinations.update({k: {"pod": k, "kind": "existing", "node": name} for k in assigned if k in keys})
    new_nodes = [n for n in result.new_nodes if any(p.key in keys for p in n.pods)]
    launches = []
    for i, new in enumerate(new_nodes):
        destinations.update({p.key: {"pod": p.key, "kind": "new", "newNode": i} for p in new.pods if p.key in keys})
        launches.append({**new_node_json(i, new), "fits": fitting_types(new)})
    unschedulable = [{"pod": k, "reason": why} for k, why in sorted(result.unschedulable.items()) if k in keys]
    for entry in unschedulable:
        missing = "; ".join(world.missing[n] for n in sorted(world.missing))
        if missing:
            entry["reason"] = f"{entry['reason']}; {missing}"
    prices = [n["pricePerHour"] for n in launches]
    return {
        "destinations": [destinations[k] for k in sorted(destinations)],
        "newNodes": launches,
        "unschedulable": unschedulable,
        "addedPricePerHour": None if any(p is None for p in prices) else round(sum(prices), 6),
    }


def _no_room(node: StateNode) -> StateNode:
    return dataclasses.replace(node, taints=(*node.taints, EXPLAIN_TAINT))


def per_provisioner(world: ProvisioningView, pod: PodRequest, scheduler: Scheduler) -> list[dict[str, Any]]:
    """For each provisioner alone (weight order, as Karpenter tries them): the new node it would
    launch for `pod`, or why it cannot."""
    base = world.base
    nodes = [_no_room(n) for n in base.nodes]
    types = base.instance_types
    out = []
    for spec in sorted(base.provisioners, key=lambda p: (-p.weight, p.name)):
        entry: dict[str, Any] = {"provisioner": spec.name, "weight": spec.weight}
        if spec.name in world.missing:
            out.append({**entry, "outcome": "rejected", "reason": world.missing[spec.name]})
            continue
        alone = tuple(types.get(spec.name, ())) if isinstance(types, Mapping) else tuple(types)
        result = scheduler(
            dataclasses.replace(
                base, pods=[pod], provisioners=[spec], instance_types={spec.name: alone}, nodes=nodes,
                settings=SchedulingSettings(exact_time_limit=0.0),
            )
        )  # fmt: skip
        if pod.key in result.unschedulable:
            reason = result.reasons.get(pod.key)
            stages = sorted({s for c in reason.clauses for s in c.stages}) if reason is not None else []
            out.append({**entry, "outcome": "rejected", "reason": result.unschedulable[pod.key], "stages": stages})
        elif result.new_nodes:
            new = result.new_nodes[0]
            out.append({**entry, "outcome": "would-launch", **_launch(new), "fits": fitting_types(new)})
        else:
            out.append({**entry, "outcome": "rejected", "reason": "no new node would be launched"})
    return out


def _launch(node: NewNode) -> dict[str, Any]:
    data = new_node_json(0, node)
    return {k: data[k] for k in ("instanceType", "zone", "capacityType", "pricePerHour")}
