"""Pods karpy planned onto a node and left to kube-scheduler: not provisioned for again until
kube-scheduler says they do not fit. Pure.

Why (issue 21). A pod karpy plans but does not bind itself — its zonal spread or (anti-)affinity
counts pods on other nodes (`bindcheck.py`), it was planned onto room of an existing node, or
`bind_pods` is off — waits for kube-scheduler, and kube-scheduler tries it again only once the
pods ahead of it in its queue have been tried: a pod it marked `Unschedulable` goes back behind
every pod it has not tried yet. In a large scale-up those untried pods (thousands) take the room
karpy launched for the marked ones first. The next pass then found that room gone and launched
again for the same pods, pass after pass, before kube-scheduler had looked at them once more: the
20,000-pod harness at load 6-13 launched ~4 nodes a pass (one a zone for the spread pods among
them, so small ones) every 4-6 s for minutes while kube-scheduler marked almost no pod (235 and
283+ nodes where the quiet run made 121; ~22,800 refusals to bind for 6,000 spread pods), and
kube-scheduler, which filters and scores every node on every attempt, slowed with the node count.

The rule (`waiting`): a pending pod karpy planned onto a node and left to kube-scheduler is not
provisioned for again while
- kube-scheduler has given no new verdict on it since (`PodView.verdict`, the message of its
  `PodScheduled=False` condition: kube-scheduler rewrites it after each failed attempt that sees
  a different cluster, e.g. another node count; a new verdict makes the pod provisionable again),
- the node it was planned onto exists and is not being deleted or marked for deletion, and
- at most `EXPECT_SECONDS` have passed since it was planned (a failed attempt whose message
  happened to be the same is not written by kube-scheduler, so it is not seen: the bound keeps
  such a pod from waiting for ever).
Meanwhile it counts on that node (room and topology, `state/schedulinginput.py`
`provisioning_input`, as a nominated pod does), so no other pod is planned into the room karpy
launched for it. The untried pods that take that room are tried by kube-scheduler, marked if
nothing fits, and provisioned for themselves — in the batch their own marks open, so a pass
launches for kube-scheduler's verdicts, not for the same pods again.

Karpenter v0.31 keeps no such memory (its in-flight nodes' room is whatever their bound pods
leave), so it relaunches for such pods the same way; karpy decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from controller.scheduling.types import PodRequest
from controller.state.snapshot import PodView, Snapshot

EXPECT_SECONDS = 120.0


@dataclass(frozen=True)
class Expectation:
    """Karpy planned the pod onto `node` at `at`, when kube-scheduler's verdict on it was `verdict`."""

    node: str
    at: float
    verdict: str


def expectation(pod: PodView, node: str, now: float) -> Expectation:
    """What karpy expects of a pod it planned onto `node` now and left to kube-scheduler."""
    return Expectation(node, now, pod.verdict)


def waiting(snap: Snapshot, expected: Mapping[str, Expectation]) -> dict[str, Expectation]:
    """Pod key → its expectation, for the pending (provisionable) pods that wait for
    kube-scheduler's verdict on the node karpy planned them onto (the rule above). Looks up only
    the pods of `expected`, not every pending pod (it runs every tick)."""
    out: dict[str, Expectation] = {}
    for key, e in expected.items():
        pod = snap.pods.get(key)
        if pod is None or not pod.provisionable or pod.verdict != e.verdict or snap.now - e.at >= EXPECT_SECONDS:
            continue
        node = snap.nodes.get(e.node)
        if node is None or node.deleting or node.marked_for_deletion:
            continue
        out[key] = e
    return out


def forget(snap: Snapshot, expected: dict[str, Expectation]) -> None:
    """Drop the expectations of pods no longer provisionable (bound, gone, nominated)."""
    for key in [k for k in expected if (pod := snap.pods.get(k)) is None or not pod.provisionable]:
        del expected[key]


def reserved(snap: Snapshot, waits: Mapping[str, Expectation]) -> dict[str, list[PodRequest]]:
    """Node name → the requests of the waiting pods expected there, as the plan counts them."""
    out: dict[str, list[PodRequest]] = {}
    for key, e in waits.items():
        pod = snap.pods.get(key)
        if pod is not None and pod.request is not None:
            out.setdefault(e.node, []).append(pod.request)
    return out
