"""What karpy would do on a live cluster now: the `karpy simulate --from-cluster` plan.

Pure over plain Kubernetes objects (a kubeconfig's lists or a saved `kubectl get … -o json`
dump) and an instance-type catalogue; `plan_cluster()` changes nothing anywhere. It reads the
objects into cluster state's own `Snapshot` and runs the controller's decisions on it:

1. nodes karpy does not manage (Cluster Autoscaler node groups, hand-made nodes) are *adopted*
   as if a Provisioner owned them — the first one (by weight, then name) whose requirements
   their labels meet — when their instance type and zone are in the catalogue (capacity type:
   theirs, else on-demand); the others stay as they are, fixed capacity;
2. pending pods get the nodes provisioning would launch (`state/schedulinginput.py` + the
   scheduler), bound there;
3. the deprovisioning methods run in their order (`deprovisioning/decide.py`, no validation
   wait) and each command is applied to the objects — candidates gone, replacements launched,
   each pod where the command's own simulation put it — until no method acts (at most
   `MAX_STEPS`), as the controller would do pass after pass.

Without a valid Provisioner in the objects, karpy's default one (consolidation enabled) is used.
The answer: every step, the launches, a per-node plan, and the hourly price before and after.
Neighbours: `controller/simulate/output.py` (the single-decision `karpy simulate`), `node.py`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.apis.awsnodetemplate import NodeTemplateNotFoundError, resolve_node_template
from controller.clock import FakeClock
from controller.cloudprovider.aws.shaping import for_provisioner
from controller.core import labels as L
from controller.core.requirements import Requirements
from controller.core.resources import format_resources
from controller.decisions import UNSCHEDULABLE
from controller.deprovisioning.decide import decide
from controller.deprovisioning.repackconsolidation import REPACK_SIMULATION
from controller.deprovisioning.simulation import ONE_NODE, simulate
from controller.deprovisioning.types import (
    REPACK_CONSOLIDATION,
    Candidate,
    Command,
    DeprovisioningSettings,
    Inputs,
    Scheduler,
)
from controller.kube.resources import NODES, PODS, PROVISIONERS, WATCHED
from controller.scheduling.types import InstanceType, NewNode
from controller.state.cluster import ClusterState
from controller.state.schedulinginput import provisionable, provisioning_input
from controller.state.snapshot import Snapshot

Obj = dict[str, Any]
MAX_STEPS = 50
CAPACITY_TYPE_LABELS = (L.CAPACITY_TYPE, "eks.amazonaws.com/capacityType")
DEFAULT_PROVISIONER: Obj = {
    "apiVersion": "karpenter.sh/v1alpha5",
    "kind": "Provisioner",
    "metadata": {"name": "default"},
    "spec": {"consolidation": {"enabled": True}},
}
NO_WAIT = DeprovisioningSettings(validation_wait_seconds=0.0)


@dataclass
class PlannedCluster:
    """The objects being planned on, by kind, and what the plan did to them."""

    objects: dict[str, list[Obj]]
    prices: dict[str, float | None] = field(default_factory=dict)  # node → hourly price
    origin: dict[str, str] = field(default_factory=dict)  # node → existing | adopted | launched
    types: dict[str, str] = field(default_factory=dict)  # node → instance type
    launched: int = 0

    def node(self, name: str) -> Obj | None:
        return next((n for n in self.objects[NODES.name] if n["metadata"]["name"] == name), None)


def _price_table(catalog: Iterable[InstanceType]) -> dict[tuple[str, str, str], float]:
    return {(it.name, o.zone, o.capacity_type): o.price for it in catalog for o in it.offerings}


def _labels(obj: Obj) -> dict[str, str]:
    labels: dict[str, str] = obj.setdefault("metadata", {}).setdefault("labels", {})
    return labels


def _capacity_type(labels: Mapping[str, str]) -> str:
    for key in CAPACITY_TYPE_LABELS:
        value = labels.get(key, "").lower()
        if value in ("spot", L.CAPACITY_TYPE_SPOT):
            return L.CAPACITY_TYPE_SPOT
        if value in ("on_demand", "on-demand", L.CAPACITY_TYPE_ON_DEMAND):
            return L.CAPACITY_TYPE_ON_DEMAND
    return L.CAPACITY_TYPE_ON_DEMAND


def state_of(objects: Mapping[str, Sequence[Obj]], now: float) -> Snapshot:
    state = ClusterState(FakeClock(now))
    for kind in WATCHED:
        state.replace(kind.name, list(objects.get(kind.name, ())))
    return state.snapshot()


def types_for(snap: Snapshot, catalog: Sequence[InstanceType]) -> dict[str, tuple[InstanceType, ...]]:
    """Each valid Provisioner's view of the catalogue (its kubelet settings, its node template)."""
    out = {}
    for view in snap.valid_provisioners():
        prov, spec = view.provisioner, view.spec
        if prov is None or spec is None:
            continue
        try:
            template = resolve_node_template(
                view.name, prov.provider_ref_name, prov.provider, snap.awsnodetemplates, None
            )
        except NodeTemplateNotFoundError:
            template = None
        out[view.name] = for_provisioner(catalog, spec.kubelet, template)
    return out


def _allows(reqs: Requirements, labels: Mapping[str, str]) -> bool:
    """Whether a Provisioner's requirements allow a node with `labels` (its instance type's
    labels included); a key the node does not carry is not held against it."""
    return all(reqs[k].has(labels[k]) for k in reqs if k != L.PROVISIONER_NAME and k in labels)


def _adopt(
    world: PlannedCluster, snap: Snapshot, prices: Mapping[tuple[str, str, str], float], catalog: Sequence[InstanceType]
) -> list[str]:
    """Give each node karpy does not manage a Provisioner, when one fits (module docstring)."""
    types = {it.name: dict(it.labels) for it in catalog}
    specs = sorted((v.spec for v in snap.valid_provisioners() if v.spec is not None), key=lambda p: (-p.weight, p.name))
    warnings = []
    for obj in world.objects[NODES.name]:
        labels, name = _labels(obj), obj["metadata"]["name"]
        key = (labels.get(L.INSTANCE_TYPE, ""), labels.get(L.ZONE, ""), _capacity_type(labels))
        world.types[name] = key[0]
        if L.PROVISIONER_NAME in labels:
            world.origin[name], world.prices[name] = "existing", prices.get(key)
            continue
        world.origin[name], world.prices[name] = "existing", prices.get(key)
        if key not in prices:
            warnings.append(f"node {name}: instance type {key[0] or '?'} in zone {key[1] or '?'} is not in the "
                            "catalogue: kept as it is")  # fmt: skip
            continue
        spec = next((s for s in specs if _allows(s.requirements, {**types[key[0]], **labels, L.CAPACITY_TYPE: key[2]})),
                    None)  # fmt: skip
        if spec is None:
            warnings.append(f"node {name}: no Provisioner's requirements allow it: kept as it is")
            continue
        labels.update({L.PROVISIONER_NAME: spec.name, L.CAPACITY_TYPE: key[2]})
        if snap.nodes[name].ready:
            labels[L.INITIALIZED] = "true"
        world.origin[name] = "adopted"
    return warnings


def _node_object(name: str, new: NewNode) -> Obj:
    """The Node a launch of `new` would register (labels as provisioning sets them)."""
    launch = new.launch
    assert launch is not None
    it = launch.instance_type
    labels = {
        **new.labels, **it.labels, L.PROVISIONER_NAME: new.provisioner, L.INSTANCE_TYPE: it.name,
        L.ZONE: launch.zone, L.CAPACITY_TYPE: launch.capacity_type, L.HOSTNAME: name, L.INITIALIZED: "true",
    }  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "creationTimestamp": "1970-01-01T00:00:00Z"},
        "spec": {"taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in new.taints]},
        "status": {
            "capacity": format_resources(it.capacity),
            "allocatable": format_resources(it.allocatable),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _launch(world: PlannedCluster, new: NewNode) -> str:
    world.launched += 1
    name = f"new-{world.launched}"
    world.objects[NODES.name].append(_node_object(name, new))
    world.prices[name] = new.launch.price if new.launch is not None else None
    world.origin[name] = "launched"
    world.types[name] = new.launch.instance_type.name if new.launch is not None else ""
    return name


def _bind(world: PlannedCluster, moves: Mapping[str, str]) -> None:
    """Put each pod (key) on its node: bound, no longer unschedulable."""
    for pod in world.objects[PODS.name]:
        meta = pod.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if key in moves:
            pod.setdefault("spec", {})["nodeName"] = moves[key]
            status = pod.setdefault("status", {})
            status["phase"] = "Running"
            status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]


def _launch_json(name: str, new: NewNode) -> dict[str, Any]:
    launch = new.launch
    return {
        "node": name, "provisioner": new.provisioner,
        "instanceType": launch.instance_type.name if launch else "", "zone": launch.zone if launch else "",
        "capacityType": launch.capacity_type if launch else "", "pricePerHour": launch.price if launch else None,
        "pods": [p.key for p in new.pods],
    }  # fmt: skip


def _provision(
    world: PlannedCluster, snap: Snapshot, types: Mapping[str, Sequence[InstanceType]], scheduler: Scheduler
) -> Any:
    found = provisionable(snap)
    if not found.pending:
        return [], {}
    result = scheduler(provisioning_input(snap, found, types))
    pending = {p.key for p in found.pending}
    launches, moves = [], {}
    for new in result.new_nodes:
        if new.launch is None:
            continue
        name = _launch(world, new)
        moves.update({p.key: name for p in new.pods if p.key in pending})
        launches.append(_launch_json(name, new))
    for node, keys in result.existing_assignments.items():
        moves.update({k: node for k in keys if k in pending})
    _bind(world, moves)
    return launches, {k: v for k, v in result.unschedulable.items() if k in pending}


def _removed(cand: Candidate) -> dict[str, Any]:
    return {"node": cand.name, "instanceType": cand.instance_type.name, "pricePerHour": cand.price}


def _apply(world: PlannedCluster, inputs: Inputs, cmd: Command, method: str, scheduler: Scheduler) -> dict[str, Any]:
    """Carry out one command on the objects; the step as the plan reports it."""
    settings = REPACK_SIMULATION if method == REPACK_CONSOLIDATION else ONE_NODE
    sim = simulate(inputs, cmd.candidates, scheduler, settings)
    moving = {p.key for c in cmd.candidates for p in c.pods}
    moves: dict[str, str] = {}
    if sim is not None:
        for node, keys in sim.result.existing_assignments.items():
            moves.update({k: node for k in keys if k in moving})
    replacements = []
    for new in cmd.replacements:
        name = _launch(world, new)
        moves.update({p.key: name for p in new.pods if p.key in moving})
        replacements.append(_launch_json(name, new))
    gone = set(cmd.node_names)
    world.objects[NODES.name] = [n for n in world.objects[NODES.name] if n["metadata"]["name"] not in gone]
    _bind(world, moves)
    return {
        "method": method,
        "action": cmd.action.value,
        "remove": [_removed(c) for c in cmd.candidates],
        "launch": replacements,
        "moves": [{"pod": k, "to": moves[k]} for k in sorted(moves)],
        "priceBefore": cmd.price_before,
        "priceAfter": cmd.price_after,
    }


def _total(world: PlannedCluster, names: Iterable[str]) -> float:
    return round(sum(p for n in names if (p := world.prices.get(n)) is not None), 6)


def plan_cluster(
    objects: Mapping[str, Sequence[Obj]], catalog: Sequence[InstanceType], now: float, scheduler: Scheduler
) -> dict[str, Any]:
    """What karpy would do on the cluster of `objects` now (module docstring), as JSON."""
    world = PlannedCluster({kind.name: copy.deepcopy(list(objects.get(kind.name, ()))) for kind in WATCHED})
    warnings: list[str] = []
    snap = state_of(world.objects, now)
    if not any(v.spec is not None for v in snap.valid_provisioners()):
        warnings.append("no valid Provisioner in the cluster: planned with karpy's default (consolidation enabled)")
        world.objects[PROVISIONERS.name].append(copy.deepcopy(DEFAULT_PROVISIONER))
        snap = state_of(world.objects, now)
    prices = _price_table(catalog)
    warnings += _adopt(world, snap, prices, catalog)
    before_nodes = [n["metadata"]["name"] for n in world.objects[NODES.name]]
    snap = state_of(world.objects, now)
    types = types_for(snap, catalog)
    launches, unschedulable = _provision(world, snap, types, scheduler)
    steps: list[dict[str, Any]] = []
    while len(steps) < MAX_STEPS:
        snap = state_of(world.objects, now)
        # the pods the plan's provisioning found no room for do not hold consolidation back (`Inputs.scale_up`)
        inputs = Inputs.of(snap, types, evaluations=dict.fromkeys(unschedulable, UNSCHEDULABLE))
        decision = decide(inputs, None, scheduler, NO_WAIT)
        if decision.execute is None:
            break
        steps.append(_apply(world, inputs, decision.execute, decision.method, scheduler))
    after_nodes = [n["metadata"]["name"] for n in world.objects[NODES.name]]
    final = state_of(world.objects, now)
    before, after = _total(world, before_nodes), _total(world, after_nodes)
    launched = round(sum(x["pricePerHour"] or 0.0 for x in launches), 6)
    return {
        "before": {"nodes": len(before_nodes), "pricePerHour": before},
        "after": {"nodes": len(after_nodes), "pricePerHour": after},
        "launchesPricePerHour": launched,
        "savingPerHour": round(before + launched - after, 6),
        "launches": launches,
        "unschedulable": [{"pod": k, "reason": v} for k, v in sorted(unschedulable.items())],
        "consolidation": steps,
        "nodes": _node_plan(world, before_nodes, after_nodes, final),
        "warnings": warnings,
    }  # fmt: skip


def _node_plan(
    world: PlannedCluster, before: Sequence[str], after: Sequence[str], final: Snapshot
) -> list[dict[str, Any]]:
    kept = set(after)
    out = []
    for name in [*before, *(n for n in after if n not in before)]:
        view = final.nodes.get(name)
        plan = "kept" if name in kept else "removed"
        if world.origin.get(name) == "launched":
            plan = "launch" if name in kept else "launch, then removed"
        out.append({
            "node": name, "origin": world.origin.get(name, "existing"), "plan": plan,
            "instanceType": world.types.get(name, ""),
            "pricePerHour": world.prices.get(name),
            "pods": sorted(p.key for p in view.movable_pods()) if view else [],
        })  # fmt: skip
    return out
