"""Which topology-gated pods wait for a member of their spread that escaped karpy's gate. Pure.

Why. karpy chooses the domain of each gated pod of a zonal spread counting the group's bound pods
and the pods it pinned earlier (`provisioning/spreadpin.py`). A member created *without* the gate
is placed by kube-scheduler, which counts only the pods bound at the instant it binds (pinned pods
still waiting are not among them): karpy cannot know that zone beforehand, nor change it after
(a pod's node selector can only be changed while it is gated, and a gate cannot be added to an
existing pod). Such members exist whenever the pod webhook failed open — its `failurePolicy` is
`Ignore`, so a call slower than its timeout (5 s) on a loaded apiserver, or a webhook down,
creates the pod ungated — or predate the webhook. The 5,000-pod harness with `--webhooks` at load
3–13: 143 of the 1,500 spread pods failed open, kube-scheduler bound them after karpy had pinned all
the others, and the spread ended at skew 4 over the four zones (maxSkew 1).

Rule. A gated pod waits — not provisioned for, not pinned, its gate kept — while a pod its
DoNotSchedule spread counts (same namespace, matched by the constraint's selector) is pending
outside karpy's choice: not bound, not gated (a pod behind any gate is scheduled by no one yet),
its own node selector not fixing that key, not a DaemonSet or mirror pod, not terminal or being
deleted, created at most `HOLD_SECONDS` ago. Once kube-scheduler has bound it, the gated pods are
placed counting it where it is, so the group's end state holds maxSkew as far as the gated pods
left can even it out (members that escape after every gated pod was pinned cannot be made up for).
The time bound keeps a member that never schedules (a pod of an older ReplicaSet that fits
nowhere, say) from holding the group for ever.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from controller.core.labels import HOSTNAME
from controller.scheduling.types import LabelSelector
from controller.state.snapshot import PodView

HOLD_SECONDS = 300.0
DO_NOT_SCHEDULE = "DoNotSchedule"


def _gated_groups(pod: PodView) -> list[tuple[str, LabelSelector]]:
    """(key, selector) of each of the pod's DoNotSchedule spreads off the hostname."""
    if pod.request is None:
        return []
    return [
        (c.topology_key, c.selector)
        for c in pod.request.topology_spread
        if c.when_unsatisfiable == DO_NOT_SCHEDULE and c.topology_key != HOSTNAME and c.selector is not None
    ]


def _escaped(pod: PodView, now: float) -> bool:
    """Pending, and placed by kube-scheduler without karpy choosing its domain (see the rule)."""
    return (
        not pod.node_name
        and not pod.scheduling_gates
        and pod.request is not None
        and not pod.is_daemonset
        and not pod.is_mirror
        and not pod.terminal
        and not pod.deleting
        and now - pod.created <= HOLD_SECONDS
    )


def spread_holds(gated: Sequence[PodView], pods: Iterable[PodView], now: float) -> dict[str, str]:
    """Pod key → why it waits, for the pods of `gated` (topology-gated, pending) whose spread
    counts an escaped member among `pods` (every pod of the snapshot)."""
    if not gated:
        return {}
    escaped: dict[str, list[PodView]] = {}
    for pod in pods:
        if _escaped(pod, now):
            escaped.setdefault(pod.namespace, []).append(pod)
    if not escaped:
        return {}
    found: dict[tuple[str, str, LabelSelector], PodView | None] = {}  # per group: one escaped member
    out: dict[str, str] = {}
    for pod in gated:
        members = escaped.get(pod.namespace)
        if not members:
            continue
        for key, selector in _gated_groups(pod):
            group = (pod.namespace, key, selector)
            if group not in found:
                found[group] = next(
                    (m for m in members if m.request is not None and key not in m.request.node_selector
                     and m.key != pod.key and selector.matches(m.labels)),
                    None,
                )  # fmt: skip
            member = found[group]
            if member is not None:
                out[pod.key] = (
                    f"waits for pod {member.key}, created without karpy's topology gate, to be placed by "
                    f"kube-scheduler: its spread on {key} counts it"
                )
                break
    return out
