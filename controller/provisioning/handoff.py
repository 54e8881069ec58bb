"""Pods karpy launched a node for and left to kube-scheduler: not planned again until
kube-scheduler has tried them since (issue 21).

Why. karpy plans only the pods kube-scheduler marked `Unschedulable` (spec §5.2). A pod planned
onto a new node that karpy does not bind itself (`bindcheck.refusal`: a zonal spread or
(anti-)affinity across nodes, a startup taint, …) and that is not nominated there
(`nominations.py`: an unpinned zonal spread, the outstanding cap) is left to kube-scheduler once
the node is released. Its mark still says "Unschedulable" — but that answer predates the node.
kube-scheduler puts the pod back in its queue when the node arrives and, in a large scale-up,
behind thousands of pods it has not tried yet, which take the node's room first. Planning the pod
again every pass (`retry_seconds`, 10 s) then launches another node for it each time — measured
at 40,000 pods without karpy's webhooks: four nodes a pass, one per zone, for about ten minutes,
for the zonal-spread Deployment's pods — while the first node's room is still to be offered to
it. So such a pod waits for kube-scheduler's own answer against the cluster with its node, as
a pod kube-scheduler has not decided yet does (`PodView.queued`).

The rule (`waiting`, pure). A recorded pod (`record`: the pods left to kube-scheduler on a new node
that was just released, marked, not pinned, not nominated) is not planned while all of these hold:
- it is still pending with the resourceVersion it had when its node was released: kube-scheduler
  writes a pod's status after each failed attempt (its condition's message names the node count,
  which the new node changed), and nothing else writes an unbound pod karpy does not nominate or
  pin — so a new resourceVersion is kube-scheduler's answer with the node in its cache;
- the node launched for it is in the cluster and not being deleted or marked for deletion;
- less than `HANDOFF_SECONDS` passed since the release (kube-scheduler retries every pod it
  left unschedulable at least every 5 min, `podMaxInUnschedulablePodsDuration`; an attempt
  whose answer was written already could go unseen, so the wait is bounded by that period).
When any stops holding the record is dropped and the pod is provisionable as before. A restart
forgets every record: each such pod is planned once more, as before this rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from controller.state.snapshot import PodView, Snapshot

HANDOFF_SECONDS = 300.0  # kube-scheduler's podMaxInUnschedulablePodsDuration


@dataclass(frozen=True)
class Handoff:
    """Pod left to kube-scheduler on `node` at `since`, with `resource_version` then."""

    node: str
    resource_version: str
    since: float


def resource_version(pod: PodView) -> str:
    meta = pod.obj.get("metadata")
    return str(meta.get("resourceVersion") or "") if isinstance(meta, Mapping) else ""


def recordable(pod: PodView | None) -> bool:
    """A pod kube-scheduler marked, still pending, that karpy neither pinned nor nominated."""
    return (
        pod is not None and not pod.node_name and pod.unschedulable and not pod.spread_pinned
        and not pod.nominated_node_name and not pod.deleting and bool(resource_version(pod))
    )  # fmt: skip


def holds(handoff: Handoff, pod: PodView | None, snap: Snapshot) -> bool:
    """Whether the pod still waits for kube-scheduler's answer with its node (module docstring)."""
    if pod is None or pod.node_name or pod.deleting or resource_version(pod) != handoff.resource_version:
        return False
    node = snap.nodes.get(handoff.node)
    if node is None or node.deleting or node.marked_for_deletion:
        return False
    return snap.now - handoff.since < HANDOFF_SECONDS


class Handoffs:
    """The recorded pods (provisioning controller's memory; one controller, one thread)."""

    def __init__(self) -> None:
        self._by_pod: dict[str, Handoff] = {}

    def __len__(self) -> int:
        return len(self._by_pod)

    def record(self, snap: Snapshot, left: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Record each (pod, node) of `left` the snapshot shows `recordable`; returns those."""
        out = []
        for key, node in left:
            pod = snap.pods.get(key)
            if pod is not None and recordable(pod):
                self._by_pod[key] = Handoff(node, resource_version(pod), snap.now)
                out.append((key, node))
        return out

    def waiting(self, snap: Snapshot) -> dict[str, Handoff]:
        """The recorded pods that still wait; the others are forgotten."""
        out: dict[str, Handoff] = {}
        for key, handoff in list(self._by_pod.items()):
            if holds(handoff, snap.pods.get(key), snap):
                out[key] = handoff
            else:
                del self._by_pod[key]
        return out
