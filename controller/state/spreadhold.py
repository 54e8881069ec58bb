"""Which pending pods of a zonal spread wait for others of their group to be bound first. Pure.

Why. karpy chooses the domain of each gated pod of a zonal spread counting the group's bound pods
and the pods it pinned earlier (`provisioning/spreadpin.py`). A member created *without* the gate
is placed by kube-scheduler, which counts only the pods bound at the instant it binds (pinned pods
still waiting are not among them): karpy cannot know that zone beforehand, nor change it after
(a pod's node selector can only be changed while it is gated, and a gate cannot be added to an
existing pod). Such members exist whenever the pod webhook failed open — its `failurePolicy` is
`Ignore`, so a call slower than its timeout (5 s) on a loaded apiserver, or a webhook down,
creates the pod ungated — or predate the webhook. The 5,000-pod harness with `--webhooks` at load
3–13: 143 of the 1,500 spread pods failed open, kube-scheduler bound them after karpy had pinned
all the others, and the spread ended at skew 4 over the four zones (maxSkew 1); at load 20–30, 75
failed open, and karpy, counting the ~1,400 pinned pods kube-scheduler did not count yet, planned
them into zones kube-scheduler refused, a new small node each pass (160 of that run's 220 launches).

Rules. A member is *unpinned* on a key when it is not bound, not gated (a pod behind any gate is
scheduled by no one yet), its own node selector does not fix that key, and it is not a DaemonSet
or mirror pod, terminal or being deleted; *pinned* likewise, its node selector fixing the key.
1. A topology-gated pod waits — not provisioned for, not pinned, its gate kept — while an unpinned
   member its DoNotSchedule spread counts (same namespace, matched by the constraint's selector)
   was created at most `HOLD_SECONDS` ago. Once kube-scheduler has bound it, the gated pods are
   placed counting it where it is, so the group's end state holds maxSkew as far as the gated pods
   left can even it out (members that escape after every gated pod was pinned cannot be made up
   for).
2. An unpinned pending pod with such a spread waits — karpy provisions nothing for it (kube-scheduler
   may still bind it into room that exists) — while a pinned member its spread counts is not bound
   yet, for at most `HOLD_SECONDS` after its creation: kube-scheduler counts that member only once
   bound, so a plan counting it now would launch into a zone kube-scheduler refuses. Looked for
   only while some pending pod is gated or pinned (not in a cluster without the webhook, every
   tick at 20,000 pending pods).
Nothing waits on a pod that waits itself (1 waits on unpinned members, 2 on pinned ones, pinned
members on nothing), and the time bound keeps a member that never schedules (a pod of an older
ReplicaSet that fits nowhere, say) from holding its group for ever.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from controller.core.labels import HOSTNAME
from controller.scheduling.types import LabelSelector
from controller.state.snapshot import PodView

HOLD_SECONDS = 300.0
DO_NOT_SCHEDULE = "DoNotSchedule"

Group = tuple[str, str, LabelSelector, bool]  # namespace, key, selector, looking for pinned members


def _spreads(pod: PodView) -> list[tuple[str, LabelSelector]]:
    """(key, selector) of each of the pod's DoNotSchedule spreads off the hostname."""
    if pod.request is None:
        return []
    return [
        (c.topology_key, c.selector)
        for c in pod.request.topology_spread
        if c.when_unsatisfiable == DO_NOT_SCHEDULE and c.topology_key != HOSTNAME and c.selector is not None
    ]


def _waiting_member(pod: PodView) -> bool:
    """Not bound and not gated: kube-scheduler may place it (pinned or not) at any moment."""
    return (
        not pod.node_name
        and not pod.scheduling_gates
        and pod.request is not None
        and not pod.is_daemonset
        and not pod.is_mirror
        and not pod.terminal
        and not pod.deleting
    )


def spread_holds(pending: Sequence[PodView], pods: Iterable[PodView], now: float) -> dict[str, str]:
    """Pod key → why it waits, for the pods of `pending` (provisionable) the rules hold;
    `pods`: the snapshot's pods (every group member it looks for is unbound, so its unbound
    pods, `Snapshot.unbound_pods`, suffice)."""
    gated = [p for p in pending if p.topology_gated]
    if not gated and not any(p.spread_pinned for p in pending):
        return {}  # no gate and no pinned pod in sight (a cluster without karpy's webhook): no scan
    unpinned = [
        p for p in pending
        if not p.topology_gated and now - p.created <= HOLD_SECONDS and p.request is not None
        and any(key not in p.request.node_selector for key, _ in _spreads(p))
    ]  # fmt: skip
    if not gated and not unpinned:
        return {}
    members: dict[str, list[PodView]] = {}
    for pod in pods:
        if _waiting_member(pod):
            members.setdefault(pod.namespace, []).append(pod)
    if not members:
        return {}
    found: dict[Group, PodView | None] = {}  # per group: one member found (or none)

    def member(pod: PodView, key: str, selector: LabelSelector, pinned: bool) -> PodView | None:
        group = (pod.namespace, key, selector, pinned)
        if group not in found:
            found[group] = next(
                (m for m in members.get(pod.namespace, ()) if m.key != pod.key and m.request is not None
                 and (key in m.request.node_selector) == pinned and selector.matches(m.labels)
                 and (pinned or now - m.created <= HOLD_SECONDS)),
                None,
            )  # fmt: skip
        return found[group]

    out: dict[str, str] = {}
    for pod in gated:
        for key, selector in _spreads(pod):
            escaped = member(pod, key, selector, pinned=False)
            if escaped is not None:
                out[pod.key] = (
                    f"waits for pod {escaped.key}, not gated (e.g. created while karpy's pod webhook failed "
                    f"open), to be bound by kube-scheduler: its spread on {key} counts it"
                )
                break
    for pod in unpinned:
        assert pod.request is not None
        for key, selector in _spreads(pod):
            pinned = None if key in pod.request.node_selector else member(pod, key, selector, pinned=True)
            if pinned is not None:
                out[pod.key] = (
                    f"waits for pod {pinned.key}, pinned to its {key} and not bound yet: kube-scheduler counts "
                    f"it in this pod's spread only once it is bound"
                )
                break
    return out
