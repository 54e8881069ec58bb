"""`PodStartupMetrics` (`metrics.pods`): Karpenter's `karpenter_pods_startup_time_seconds`.

`reconcile()` (job every `INTERVAL_SECONDS`) observes, once per pod, the time from the pod's
creation to its `Ready` condition's `lastTransitionTime` once that condition is `True` (Karpenter
v0.31's pod metrics controller). Reading the condition's own time makes the figure independent of
how often this job runs, and a pod is observed even if it went from created to Ready between two
runs; so the job runs every 5 s, not every second: each run walks every pod, which at 20,000 pods
was 9 % of the controller's busy time during a scale-up (issue 21's end-to-end profile). A pod
created, Ready and gone within one interval is not observed.
Pods created before the controller started (`started`) and already past `Pending` at the first
synced run are never observed — their age says nothing about startup; a pod created after the
start is observed even when the first synced run (up to an interval after the start, later while
the watches sync) finds it running already. Pods that go away are forgotten.
(Karpenter, watch-driven, takes the condition whatever its status for a pod it saw Pending; a
running pod whose readiness probe has not passed yet would then count its creation time.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.core.timestamps import parse_timestamp
from controller.metrics import PODS_STARTUP_TIME
from controller.state.cluster import ClusterState

INTERVAL_SECONDS = 5.0


class PodStartupMetrics:
    name = "metrics.pods"

    def __init__(self, state: ClusterState, started: float | None = None) -> None:
        """`started`: when the controller started (epoch seconds); None: every pod past Pending at
        the first synced run counts as older."""
        self.state = state
        self._started = started
        self._before: set[str] | None = None  # running before the start, seen at the first synced run
        self._observed: set[str] = set()

    def reconcile(self) -> int:
        """How many startups were observed in this pass."""
        snap = self.state.snapshot()
        if not snap.synced:
            return 0
        if self._before is None:
            self._before = {
                key
                for key, pod in snap.pods.items()
                if pod.phase not in ("", "Pending") and (self._started is None or pod.created < self._started)
            }
        observed = 0
        for key, pod in snap.pods.items():
            if pod.phase in ("", "Pending") or key in self._before or key in self._observed:
                continue
            ready = _ready_since(pod.obj)
            if ready is not None:
                PODS_STARTUP_TIME.observe(max(0.0, ready - pod.created))
                self._observed.add(key)
                observed += 1
        self._before &= snap.pods.keys()
        self._observed &= snap.pods.keys()
        return observed


def _ready_since(obj: Mapping[str, Any]) -> float | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == "Ready" and cond.get("status") == "True":
            since = cond.get("lastTransitionTime")
            return parse_timestamp(since if isinstance(since, str) else None)
    return None
