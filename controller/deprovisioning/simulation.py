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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.deprovisioning.types import Candidate, Inputs, Scheduler, requests
from controller.scheduling.types import NewNode, SchedulingResult, SchedulingSettings
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


def simulate(
    inputs: Inputs, cands: Sequence[Candidate], scheduler: Scheduler, settings: SchedulingSettings = ONE_NODE
) -> Simulation | None:
    """Simulate removing `cands` under `settings`; None (abort, retry later) if one is already
    marked for deletion."""
    names = {c.name for c in cands}
    if any(c.node.marked_for_deletion for c in cands):
        return None
    moving = requests(p for c in cands for p in c.pods)
    moving += requests(p for p in inputs.provisionable.rescheduled if p.node_name not in names)
    source = inputs.node_source  # the nodes not marked for deletion
    nodes = [n for n in source.nodes if n.name not in names]
    pods = [*moving, *inputs.provisionable.pending_requests()]
    result = scheduler(scheduling_input(inputs.state, pods, nodes, inputs.instance_types, settings, source))
    must_move = {p.key for p in moving}
    errors = {key: why for key, why in result.unschedulable.items() if key in must_move}
    for node_name, pod_keys in result.existing_assignments.items():
        if not inputs.state.nodes[node_name].initialized:
            for key in pod_keys:
                if key in must_move:
                    errors[key] = f"would schedule against a non-initialized node {node_name}"
    return Simulation(result=result, errors=errors)
