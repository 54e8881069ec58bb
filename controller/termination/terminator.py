"""Which pods of a deleting node to evict now, and when the node is drained (spec §7). Pure.

Ignored: terminal pods, pods stuck terminating for more than a minute, pods that tolerate the
`node.kubernetes.io/unschedulable:NoSchedule` taint (DaemonSet pods get that toleration), and
DaemonSet and static (mirror) pods. Of the rest, pods already terminating are waited for, and
`karpenter.sh/do-not-evict: "true"` pods are waited for, never evicted (karpy's decision, as the
seed docs describe). Eviction order: while any non-critical pod remains, only non-critical pods
are evicted; critical pods (`system-cluster-critical`, `system-node-critical`) come last.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.state.snapshot import NodeView, PodView

STUCK_TERMINATING_SECONDS = 60.0


@dataclass(frozen=True)
class DrainPlan:
    evict: tuple[PodView, ...]
    waiting: tuple[PodView, ...]  # terminating, or protected by do-not-evict
    do_not_evict: tuple[PodView, ...]

    @property
    def drained(self) -> bool:
        return not self.evict and not self.waiting


def must_leave(pod: PodView, now: float) -> bool:
    if pod.terminal or pod.is_mirror or pod.is_daemonset or pod.tolerates_unschedulable:
        return False
    return not (pod.deletion_timestamp is not None and now - pod.deletion_timestamp > STUCK_TERMINATING_SECONDS)


def drain_plan(node: NodeView, now: float) -> DrainPlan:
    pods = [p for p in node.pods if must_leave(p, now)]
    protected = tuple(p for p in pods if p.do_not_evict and not p.deleting)
    terminating = tuple(p for p in pods if p.deleting)
    evictable = [p for p in pods if not p.deleting and not p.do_not_evict]
    if any(not p.critical for p in pods):
        evict = tuple(p for p in evictable if not p.critical)
    else:
        evict = tuple(evictable)
    return DrainPlan(evict=evict, waiting=terminating + protected, do_not_evict=protected)
