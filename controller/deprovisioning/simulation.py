"""Scheduling simulation: if these candidates were gone, where would their pods go? (spec §6.2)

Pure, apart from calling the injected scheduler (itself pure). The input is built by the one
builder of the scheduler's view (`state/schedulinginput.py`): the remaining capacity is every
owned node that is neither a candidate nor marked for deletion; the pods are the candidates'
pods, the pods of nodes already being deleted, and the pending pods (so a replacement also
absorbs them). A pod placed on a node that is not initialized counts as not scheduled. Every
simulation of a pass draws its nodes from the pass's `Inputs.node_source`, so the scheduler sets
the remaining nodes up once per pass, not once per simulation (`scheduling/existing.py`).

karpy decision (as later Karpenter, `AllNonPendingPodsScheduled`): only the pods that would
have to move must schedule; a pending pod that fits nowhere does not block deprovisioning.

`unplaced_by_provisioning`: the same simulation with a command's replacements up (`planned_nodes`)
and provisioning's own settings — whether provisioning, which re-places a deleted node's pods its
own way, would launch more nodes for them than the command planned (repack consolidation keeps
only plans it would not; `repackconsolidation.py`).

`spill`: where kube-scheduler, not the plan, would put the pods a command moves (karpy decision,
issue 21). On a cluster the pods of a deleted node are deleted and their successors (a
ReplicaSet's new pods) are placed by kube-scheduler, whose default profile scores highest the
feasible node with the most room left (NodeResourcesFit `LeastAllocated`, balanced allocation)
and, for a ReplicaSet's pods, the fewest pods like them (PodTopologySpread's system defaults,
weighted 2) — an empty replacement first, whatever pods come — not where the plan's first fit
put them; pods it then finds no room for (a zonal spread's pods whose zone's
room others took) are provisioned again, on new nodes a later pass consolidates again. The model:
the same solve with the replacements up and empty and `least_allocated` placement (the solver's
model of those scores); the moving pods
it puts on new nodes (or nowhere) spill, and their new nodes' price is what the command really
adds (`consolidation.py` counts it against the saving).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.core.labels import HOSTNAME
from controller.deprovisioning.types import Candidate, Command, Inputs, Scheduler, requests
from controller.scheduling.scheduler import planned_labels
from controller.scheduling.types import NewNode, SchedulingResult, SchedulingSettings, StateNode
from controller.state.schedulinginput import scheduling_input


@dataclass(frozen=True, eq=False)
class Simulation:
    result: SchedulingResult
    errors: Mapping[str, str]
    """pod key → why it would not schedule, for the pods that must move."""

    @property
    def new_nodes(self) -> tuple[NewNode, ...]:
        return self.result.new_nodes

    @property
    def all_scheduled(self) -> bool:
        return not self.errors

    def describe_errors(self) -> str:
        return "; ".join(f"{pod}: {why}" for pod, why in sorted(self.errors.items()))


ONE_NODE = SchedulingSettings(exact_more_nodes=False)
"""Karpenter's consolidators replace with one node at most: the exact packing must not add nodes."""


PROVISIONING = SchedulingSettings()
"""Provisioning's own solve (its default settings), for `unplaced_by_provisioning`."""


KUBE_SCHEDULER = SchedulingSettings(exact_time_limit=0.0, least_allocated=True)
"""kube-scheduler's placement of the pods a command moves, for `spill`: the emptiest node that
accepts a pod takes it; new nodes (for what finds no room) by the heuristic alone."""


def simulate(
    inputs: Inputs,
    cands: Sequence[Candidate],
    scheduler: Scheduler,
    settings: SchedulingSettings = ONE_NODE,
    planned: Sequence[StateNode] = (),
    initialized_only: bool = False,
) -> Simulation | None:
    """Simulate removing `cands` under `settings` (with `planned` nodes up beside the remaining
    ones; with `initialized_only`, the remaining nodes not yet initialized left out); None (abort,
    retry later) if one is already marked for deletion."""
    names = {c.name for c in cands}
    if any(c.node.marked_for_deletion for c in cands):
        return None
    moving = requests(p for c in cands for p in c.pods)
    moving += requests(p for p in inputs.provisionable.rescheduled if p.node_name not in names)
    source = inputs.node_source  # the nodes not marked for deletion
    nodes = [*(n for n in source.nodes if n.name not in names and (n.initialized or not initialized_only)), *planned]
    pods = [*moving, *inputs.provisionable.pending_requests()]
    result = scheduler(scheduling_input(inputs.state, pods, nodes, inputs.instance_types, settings, source))
    must_move = {p.key for p in moving}
    errors = {key: why for key, why in result.unschedulable.items() if key in must_move}
    for node_name, pod_keys in result.existing_assignments.items():
        node = inputs.state.nodes.get(node_name)  # a planned node is not in state: up and initialized
        if node is not None and not node.initialized:
            for key in pod_keys:
                if key in must_move:
                    errors[key] = f"would schedule against a non-initialized node {node_name}"
    return Simulation(result=result, errors=errors)


def planned_nodes(replacements: Sequence[NewNode]) -> list[StateNode]:
    """A command's replacements as the nodes they become once launched as planned and initialized:
    empty, labelled as launched (`scheduler.planned_labels`), the launch's allocatable."""
    out = []
    for i, new in enumerate(replacements):
        if new.launch is None:
            continue
        name = f"planned-replacement-{i}"
        it = new.launch.instance_type
        labels = {**planned_labels(new), HOSTNAME: name}
        out.append(StateNode(name, labels, dict(it.allocatable), dict(it.capacity), tuple(new.taints)))
    return out


def unplaced_by_provisioning(inputs: Inputs, cmd: Command, scheduler: Scheduler) -> int:
    """How many of the pods `cmd` moves provisioning's own solve would put on new nodes (or leave
    unplaced) once `cmd`'s replacements are up and its candidates marked for deletion. Provisioning
    re-places a deleted node's pods its own way, not as the command planned: where its packing
    cannot reproduce a tight plan it launches more nodes (0: the plan's room is enough for it too)."""
    moving = {p.key for c in cmd.candidates for p in c.pods}
    sim = simulate(inputs, cmd.candidates, scheduler, PROVISIONING, planned_nodes(cmd.replacements))
    if sim is None:
        return len(moving)
    on_new = {p.key for n in sim.new_nodes for p in n.pods}
    return len(moving & (on_new | set(sim.errors)))


@dataclass(frozen=True)
class Spill:
    """The pods a command moves that kube-scheduler would find no room for (`spill`), and the
    hourly price of the nodes provisioning would launch for them (inf when some fit nowhere)."""

    pods: int = 0
    price: float = 0.0

    def __bool__(self) -> bool:
        return self.pods > 0


def spill(inputs: Inputs, cmd: Command, scheduler: Scheduler) -> Spill:
    """Where kube-scheduler's scoring, not the plan, puts the pods `cmd` moves: its candidates
    gone, its replacements up and empty (`planned_nodes`), each pod on the accepting node with
    the most room left (`KUBE_SCHEDULER`); nodes not yet initialized are no room (the plan may not
    count them either). The pods that land on a new node or nowhere spill; the price is that of
    the new nodes they need (module docstring)."""
    moving = {p.key for c in cmd.candidates for p in c.pods}
    sim = simulate(inputs, cmd.candidates, scheduler, KUBE_SCHEDULER, planned_nodes(cmd.replacements), True)
    if sim is None:
        return Spill(len(moving), math.inf)
    on_new = {p.key for n in sim.new_nodes for p in n.pods} & moving
    nowhere = set(sim.errors) & moving
    if not on_new and not nowhere:
        return Spill()
    price = math.inf if nowhere else 0.0
    for node in sim.new_nodes:
        if moving.intersection(p.key for p in node.pods):
            price += node.launch.price if node.launch is not None else math.inf
    return Spill(len(on_new | nowhere), price)
