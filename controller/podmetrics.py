"""`PodStartupMetrics` (`metrics.pods`): Karpenter's `karpenter_pods_startup_time_seconds`.

`reconcile()` (job every second) observes, once per pod, the time from the pod's creation to the
first snapshot that shows it `Running` (Karpenter v0.31's pod metrics controller: "the time from
pod creation until the pod is running"). Pods already running when the controller starts are
not observed (their age says nothing about startup); pods that go away are forgotten.
"""

from __future__ import annotations

from controller.metrics import PODS_STARTUP_TIME
from controller.state.cluster import ClusterState


class PodStartupMetrics:
    name = "metrics.pods"

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._running: set[str] | None = None  # None: not synced yet

    def reconcile(self) -> int:
        """How many startups were observed in this pass."""
        snap = self.state.snapshot()
        if not snap.synced:
            return 0
        running = {key for key, pod in snap.pods.items() if pod.phase == "Running"}
        observed = 0
        if self._running is not None:
            for key in sorted(running - self._running):
                PODS_STARTUP_TIME.observe(max(0.0, snap.now - snap.pods[key].created))
                observed += 1
        self._running = running
        return observed
