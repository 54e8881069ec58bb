"""The cluster as the scheduler sees it: a state `Snapshot` → `SchedulingInput`, for every caller.

Pure. Every decision that asks the scheduler "where would these pods go?" builds its input here,
so the three agree on what a node, a pending pod and a DaemonSet look like:
- provisioning (`provisioning_input`): the provisionable pods, then the pods of nodes marked for
  deletion (spec §5.2: their replacement capacity is provisioned before they are evicted), onto
  every node of the snapshot (in-flight included; a marked node's pods counted there for topology
  until placed);
- deprovisioning's simulation (`deprovisioning/simulation.py`): the pods that would move, then
  the provisionable pods, onto the nodes that stay;
- the interruption replacement check (`interruption/replacement.py`): a node's pods onto the
  initialized, schedulable nodes that stay, with no launch allowed.
Provisioners: the valid ones not being deleted, by name (`Snapshot.valid_provisioners`).
DaemonSets: their pod templates, converted once per snapshot (`Snapshot.daemonset_pods`).
Volumes: the snapshot's claims, volumes, classes and CSINode limits (`Snapshot.volumes`), which
`scheduling/volumes.py` applies to every pod with a claim.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from controller.scheduling.types import (
    InstanceType,
    NodeSource,
    PodRequest,
    SchedulingInput,
    SchedulingSettings,
    StateNode,
)
from controller.state.snapshot import PodView, Snapshot
from controller.state.spreadhold import spread_holds

InstanceTypes = Sequence[InstanceType] | Mapping[str, Sequence[InstanceType]]


@dataclass(frozen=True)
class Provisionable:
    """The pods a provisioning pass considers (decisions table; spec §3.4, §5.2)."""

    pending: tuple[PodView, ...]  # to bind once a node is chosen
    rescheduled: tuple[PodView, ...]  # pods of nodes marked for deletion
    ignored: tuple[tuple[PodView, str], ...]  # (pod, why) never provisioned for
    # (pod, why) zonal-spread pods that wait for others of their group to be bound first: gated
    # ones for a member that escaped the gate, unpinned ones for a pinned member (`spreadhold.py`)
    held: tuple[tuple[PodView, str], ...] = ()

    def pending_requests(self) -> tuple[PodRequest, ...]:
        return tuple(p.request for p in self.pending if p.request is not None)


def provisionable(snap: Snapshot, ordered: bool = True) -> Provisionable:
    """The provisionable pods the scheduler can read and Karpenter would not ignore (oldest
    first; in no particular order with `ordered=False`), less the zonal-spread pods held
    (`spreadhold.py`), the movable pods of owned nodes marked for deletion (by node name), and the
    ignored."""
    pending, ignored = [], []
    for pod in snap.pending_pods(ordered):
        if pod.request is None:
            ignored.append((pod, "the pod spec cannot be read"))
        elif pod.request.ignore_reason:
            ignored.append((pod, pod.request.ignore_reason))
        else:
            pending.append(pod)
    holds = spread_holds(pending, snap.unbound_pods(), snap.now)
    held = tuple((p, holds[p.key]) for p in pending if p.key in holds)
    if held:
        pending = [p for p in pending if p.key not in holds]
    rescheduled: list[PodView] = []
    for node in sorted(snap.nodes.values(), key=lambda n: n.name):
        if node.marked_for_deletion and node.owned:
            rescheduled.extend(node.movable_pods())
    return Provisionable(tuple(pending), tuple(rescheduled), tuple(ignored), held)


def scheduling_input(
    snap: Snapshot,
    pods: Sequence[PodRequest],
    nodes: Iterable[StateNode],
    instance_types: InstanceTypes | None = None,
    settings: SchedulingSettings | None = None,
    node_source: NodeSource | None = None,
) -> SchedulingInput:
    """`pods` onto `nodes`; new nodes from the valid provisioners when `instance_types` are
    given (None: no launch at all, no provisioner). `node_source`: the nodes `nodes` are drawn
    from, when many solves draw from the same (a deprovisioning pass; `scheduling.types.NodeSource`)."""
    provisioners = (
        [v.spec for v in snap.valid_provisioners() if v.spec is not None] if instance_types is not None else []
    )
    return SchedulingInput(
        pods=pods,
        provisioners=provisioners,
        instance_types=instance_types if instance_types is not None else {},
        nodes=list(nodes),
        daemonsets=snap.daemonset_pods,
        settings=settings or SchedulingSettings(),
        volumes=snap.volumes,
        node_source=node_source,
    )


def provisioning_input(
    snap: Snapshot, found: Provisionable, instance_types: InstanceTypes, settings: SchedulingSettings | None = None
) -> SchedulingInput:
    """A provisioning pass's input: the pending pods, then the rescheduled ones, onto every node.
    A marked node keeps the pods being placed again: the solve takes no room for them there but
    counts them for topology until it places them (as kube-scheduler counts them until they are
    evicted; `scheduling/topology.py`), after every pending pod. A pending pod nominated to a
    node (`status.nominatedNodeName`: by kube-scheduler's preemption or by karpy,
    `provisioning/nominations.py`) counts on that node, room and topology, as kube-scheduler
    reserves it there."""
    pods = [p.request for p in (*found.pending, *found.rescheduled) if p.request is not None]
    nominated = nominated_requests(snap)
    nodes = []
    for node in snap.nodes.values():
        state_node = node.state_node()
        if node.name in nominated and not node.marked_for_deletion:  # a marked node's: cleared, placed again
            state_node = dataclasses.replace(state_node, pods=(*state_node.pods, *nominated[node.name]))
        nodes.append(state_node)
    return scheduling_input(snap, pods, nodes, instance_types, settings)


def nominated_requests(snap: Snapshot) -> dict[str, list[PodRequest]]:
    """Node name → the pending pods nominated to it (not bound, not deleting, not terminal)."""
    out: dict[str, list[PodRequest]] = {}
    for pod in snap.unbound_pods():
        live = not pod.node_name and not pod.deleting and not pod.terminal
        if pod.nominated_node_name and live and pod.request is not None:
            out.setdefault(pod.nominated_node_name, []).append(pod.request)
    return out
