"""`PodStartupMetrics` (`metrics.pods`): Karpenter's `karpenter_pods_startup_time_seconds`.

`reconcile()` (job every second) does what Karpenter v0.31's pod metrics controller does: a pod
seen `Pending` is remembered; once it is past `Pending` and its `Ready` condition is `True`, the
time from its creation to that condition's `lastTransitionTime` is observed, once (Karpenter
takes the condition whatever its status; a running pod whose readiness probe has not passed yet
would then count the time it was created at). Reading the
condition's own time makes the figure independent of how often this job runs. Pods never seen
pending (running when the controller started) are not observed — their age says nothing about
startup; pods that go away are forgotten.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.core.timestamps import parse_timestamp
from controller.metrics import PODS_STARTUP_TIME
from controller.state.cluster import ClusterState


class PodStartupMetrics:
    name = "metrics.pods"

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._pending: set[str] = set()

    def reconcile(self) -> int:
        """How many startups were observed in this pass."""
        snap = self.state.snapshot()
        if not snap.synced:
            return 0
        observed = 0
        for key, pod in snap.pods.items():
            if pod.phase == "Pending":
                self._pending.add(key)
                continue
            ready = _ready_since(pod.obj) if key in self._pending else None
            if ready is not None:
                PODS_STARTUP_TIME.observe(max(0.0, ready - pod.created))
                self._pending.discard(key)
                observed += 1
        self._pending &= snap.pods.keys()
        return observed


def _ready_since(obj: Mapping[str, Any]) -> float | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == "Ready" and cond.get("status") == "True":
            since = cond.get("lastTransitionTime")
            return parse_timestamp(since if isinstance(since, str) else None)
    return None
