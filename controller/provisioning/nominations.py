"""Telling kube-scheduler where karpy expects a pod it leaves to it: `status.nominatedNodeName`.

Why (issue 21). A pod karpy plans onto a node but does not bind itself (`bindcheck.refusal`: a
zonal spread or (anti-)affinity across nodes, a claim still to bind, a startup taint, …; or any
pod planned onto an existing node, or every pod with `bind_pods` off) is left to kube-scheduler.
Once the node is released, kube-scheduler fills its room with whatever pods come first in its
queue — thousands of new pods in a large scale-up — and the pod karpy launched the node for
fails again, is planned again and another node is launched for it. The mechanism KEP-5278
("NominatedNodeName for an expected pod placement") describes for autoscalers fixes that:
karpy writes the node it planned into the pod's `status.nominatedNodeName` (pods/status).

What kube-scheduler does with it (read in kube-scheduler v1.33's source, the version of the
local control plane): the scheduling queue's nominator takes a nomination set by anyone from the
pod informer (`backend/queue/nominator.go`: an update with mode Noop records
`pod.Status.NominatedNodeName`, unless the pod is bound); every pod of equal or lower priority
is filtered against that node with the nominated pods' requests and topology added
(`RunFilterPluginsWithNominatedPods`), so the room stays the nominated pod's; and the nominated
pod tries that node first (`schedule_one.go` `evaluateNominatedNode`; a node missing from its
cache is only logged there, then every node is tried). An attempt that fails with no preemption
candidate clears the nomination (DefaultPreemption's PostFilter answers node "", written back to
the pod), so a stale one cleans itself up at the pod's next attempt.

When. A held node (created cordoned, `nodes.py`) fails every pod tried on it
(NodeUnschedulable), and that failure would clear the nomination at once: so the pods of a new
node are nominated when karpy releases it — after its own bindings, just before the uncordon,
the event that sends those pods back to kube-scheduler's queue. Pods planned onto a node that is
not held (existing room, in-flight nodes, or `bind_pods` off) are nominated in the pass.

The rule (`nominations`, pure):
- a pod is nominated only while pending (not bound by anyone, not deleting, not terminal, not
  gated) and only onto a node that exists in the snapshot, not being deleted or marked for
  deletion; and only when its nomination differs from what is there (no write otherwise);
- kube-scheduler counts the pods nominated to the node it evaluates as if they ran there, for
  resources and for topology. So a pod nominated to a node raises, for every other pod of its
  DoNotSchedule topology spread evaluated on that node, the count of the node's domain: when that
  domain is at the minimum — the only time the group may grow there, with maxSkew 1 — the node is
  closed to the whole group but the nominated pod, though karpy planned more of the group there.
  A pod with such a spread is therefore nominated only when its own node selector fixes the
  spread's key (a pod pinned by
  karpy's topology gate, `spreadpin.py`): only its own domain counts, the nominated pods raise its
  minimum with its count, and any number fit. At most one pod a node of each required
  anti-affinity term off the hostname. The others are left to kube-scheduler as before;
- a pending pod whose nomination names a node that is gone, being deleted or marked for
  deletion has it cleared (kube-scheduler clears one only at the pod's next failed attempt,
  which may be minutes away), so it is provisioned for again;
- at most `NOMINATIONS_PER_PASS` writes a pass (plan order), like the FailedScheduling events;
- at most `OUTSTANDING` pending pods nominated at once in the cluster (theirs counted, by anyone):
  kube-scheduler filters every pod it tries on a node with nominated pods against a copy of that
  node's state with each nominated pod added (`addGENominatedPods`: the node's pod list cloned and
  each nominated pod's info deep-copied, on every attempt, for every such node). Measured with
  ~1,400 pinned zonal-spread pods nominated at once (5,000 pods, karpy's webhooks, load ~25):
  kube-scheduler spent 37 ms of CPU an attempt against 1.5 ms without nominations (quiet run),
  and had 53 % of the pods Running after 15 minutes.

A nominated pod is not provisionable (Karpenter's rule for a preempting pod,
`PodView.provisionable`) until kube-scheduler binds it or clears the nomination, so karpy does not
launch for it again; its requests and labels count on its nominated node in the next passes'
plans (`state/schedulinginput.py`), as kube-scheduler reserves them, and consolidation waits while
one is pending (`deprovisioning/types.py` `Inputs.scale_up`). The writes go to the pods/status
subresource (`status_patch`, a merge patch of that one field, written by the provisioning
controller) without a resourceVersion: kube-scheduler writes the status of every pod it tries, so
a guarded write would conflict most of the time (30 of 249 written in one pass of a 5,000-pod
run). A pod kube-scheduler binds in the instant between the decision and the write keeps an inert
field — kube-scheduler's nominator ignores a bound pod's nomination, and karpy counts only
unbound ones. An error changes nothing; the next pass decides again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from controller.core.labels import HOSTNAME
from controller.scheduling.types import LabelSelector, PodRequest
from controller.state.snapshot import PodView, Snapshot

NOMINATIONS_PER_PASS = 500
OUTSTANDING = 50  # pending pods nominated at once, cluster-wide: each costs kube-scheduler on every attempt
DO_NOT_SCHEDULE = "DoNotSchedule"


@dataclass(frozen=True)
class Nomination:
    """Write `node` into the pod's `status.nominatedNodeName` ("" clears it)."""

    pod: PodView
    node: str


@dataclass(frozen=True)
class Group:
    """Pods whose nominations to one node count against each other in kube-scheduler's filter:
    those `selector` selects in `namespaces` (all when `all_namespaces`), at most `cap` a node."""

    namespaces: frozenset[str]
    all_namespaces: bool
    selector: LabelSelector | None
    key: str
    cap: int

    def selects(self, pod: PodRequest) -> bool:
        if self.selector is None or (not self.all_namespaces and pod.namespace not in self.namespaces):
            return False
        return self.selector.matches(pod.labels)


def unpinned_spread(pod: PodRequest) -> str:
    """The key of a DoNotSchedule spread of the pod that its node selector does not fix ("" when
    none): such a pod is not nominated."""
    for c in pod.topology_spread:
        if c.when_unsatisfiable == DO_NOT_SCHEDULE and c.topology_key not in pod.node_selector:
            return c.topology_key
    return ""


def groups(pod: PodRequest) -> tuple[Group, ...]:
    """The groups capping this pod's nominations: its required anti-affinity terms off the
    hostname (one pod of each a node)."""
    return tuple(
        Group(t.namespaces, t.namespace_selector is not None, t.selector, t.topology_key, 1)
        for t in pod.pod_anti_affinity
        if t.topology_key != HOSTNAME
    )


def _nominable(pod: PodView | None) -> bool:
    return (
        pod is not None and pod.request is not None and not pod.node_name and not pod.deleting
        and not pod.terminal and not pod.scheduling_gates
    )  # fmt: skip


def _node_ok(snap: Snapshot, name: str) -> bool:
    node = snap.nodes.get(name)
    return node is not None and not node.deleting and not node.marked_for_deletion


def nominations(
    snap: Snapshot, planned: Iterable[tuple[str, str]], limit: int = NOMINATIONS_PER_PASS, clear_stale: bool = True
) -> list[Nomination]:
    """The nominations to write for `planned` (pod key, node), in that order, then (with
    `clear_stale`) the stale ones to clear; at most `limit` in all. Pure."""
    out: list[Nomination] = []
    there: dict[str, list[PodRequest]] = {}  # node → pods nominated to it (the snapshot's, then ours)
    outstanding = 0
    for view in snap.unbound_pods():
        if view.nominated_node_name and _nominable(view) and view.request is not None:
            there.setdefault(view.nominated_node_name, []).append(view.request)
            outstanding += 1
    for key, node in planned:
        if len(out) >= limit:
            return out
        if outstanding >= OUTSTANDING:
            break
        pod = snap.pods.get(key)
        if pod is None or not _nominable(pod) or pod.request is None:
            continue
        if pod.nominated_node_name == node or not _node_ok(snap, node) or unpinned_spread(pod.request):
            continue
        others = [p for p in there.get(node, ()) if p.key != key]
        if any(sum(1 for o in others if g.selects(o)) >= g.cap for g in groups(pod.request)):
            continue
        out.append(Nomination(pod, node))
        there.setdefault(node, []).append(pod.request)
        outstanding += 0 if pod.nominated_node_name else 1
    for view in snap.unbound_pods() if clear_stale else ():
        if len(out) >= limit:
            break
        if view.nominated_node_name and _nominable(view) and not _node_ok(snap, view.nominated_node_name):
            out.append(Nomination(view, ""))
    return out


def status_patch(node: str) -> dict[str, Any]:
    """The merge patch of pods/status setting (or, with "", removing) the nomination."""
    return {"status": {"nominatedNodeName": node or None}}
