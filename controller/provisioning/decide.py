"""Snapshot → `SchedulingInput`, and the launch-time limit check. Pure.

Pods: the provisionable pods (decisions table) that the scheduler can read and Karpenter would
not ignore, then the pods of nodes marked for deletion (spec §5.2: their replacement capacity is
provisioned before they are evicted). Nodes: every node of the snapshot (in-flight included).
Daemonsets: each DaemonSet's pod template. Provisioners: the valid ones not being deleted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.scheduling.types import InstanceType, SchedulingInput, SchedulingSettings, StateNode
from controller.scheduling.workloads import daemonset_pods
from controller.state.snapshot import PodView, Snapshot


@dataclass(frozen=True)
class Candidates:
    pending: tuple[PodView, ...]  # to bind once a node is chosen
    rescheduled: tuple[PodView, ...]  # pods of nodes marked for deletion
    ignored: tuple[tuple[PodView, str], ...]  # (pod, why) never provisioned for


def candidates(snap: Snapshot) -> Candidates:
    pending, ignored = [], []
    for pod in snap.pending_pods():
        if pod.request is None:
            ignored.append((pod, "the pod spec cannot be read"))
        elif pod.request.ignore_reason:
            ignored.append((pod, pod.request.ignore_reason))
        else:
            pending.append(pod)
    rescheduled: list[PodView] = []
    for node in sorted(snap.nodes.values(), key=lambda n: n.name):
        if node.marked_for_deletion and node.owned:
            rescheduled.extend(node.movable_pods())
    return Candidates(tuple(pending), tuple(rescheduled), tuple(ignored))


def scheduling_input(
    snap: Snapshot,
    cands: Candidates,
    instance_types: Sequence[InstanceType] | Mapping[str, Sequence[InstanceType]],
    settings: SchedulingSettings | None = None,
) -> SchedulingInput:
    pods = [p.request for p in (*cands.pending, *cands.rescheduled) if p.request is not None]
    rescheduled = {p.key for p in cands.rescheduled}
    provisioners = [
        v.spec
        for v in sorted(snap.provisioners.values(), key=lambda v: v.name)
        if v.spec is not None and not v.deleting
    ]
    nodes = []
    for node in snap.nodes.values():
        state_node = node.state_node()
        if rescheduled and node.marked_for_deletion:
            # their pods are being placed again: they must not also count where they are now
            state_node = _without(state_node, rescheduled)
        nodes.append(state_node)
    return SchedulingInput(
        pods=pods,
        provisioners=provisioners,
        instance_types=instance_types,
        nodes=nodes,
        daemonsets=daemonset_pods(snap.daemonsets),
        settings=settings or SchedulingSettings(),
    )


def _without(node: StateNode, keys: set[str]) -> StateNode:
    return dataclasses.replace(node, pods=tuple(p for p in node.pods if p.key not in keys))


def limit_exceeded(limits: Mapping[str, int], usage: Mapping[str, int], adding: Mapping[str, int]) -> str:
    """Why launching `adding` would exceed the provisioner's limits ("" when it would not)."""
    for resource, limit in sorted(limits.items()):
        total = usage.get(resource, 0) + adding.get(resource, 0)
        if total > limit:
            return f"{resource} resource usage of {total} exceeds limit of {limit}"
    return ""
