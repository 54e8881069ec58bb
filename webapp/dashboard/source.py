"""`DashboardSource`: everything a dashboard page reads, gathered once per request.

The kube side is a `ClusterState` (the controller's own state type) fed by informers over a
`ReadOnlyKube`, started on first use, so a page costs one in-memory snapshot instead of a list
of every pod. The controller side is its GET API (node prices and outlooks, pending-pod
reasons, decisions), cached `cache_seconds` so refreshing pages do not hammer it; when it is
unreachable `ControllerAnswers.error` says so and the pages still show the cluster. A sampler
thread keeps one hour of (time, nodes, cost) for the overview chart.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from controller.clock import Clock
from controller.kube.client import Kube
from controller.state.cluster import ClusterState
from controller.state.informer import start_informers
from controller.state.snapshot import Snapshot
from webapp.dashboard.reader import ControllerAPI, ControllerError, KubeReads

log = logging.getLogger(__name__)

HISTORY_SECONDS = 3600.0
SAMPLE_SECONDS = 15.0
DECISIONS_LIMIT = 500


@dataclass(frozen=True)
class ControllerAnswers:
    """What the controller said; `error` is non-empty when it could not be asked."""

    error: str = ""
    nodes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    pending: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    decisions: tuple[Mapping[str, Any], ...] = ()
    cloud_problem: str = ""  # why the controller's cloud provider does not answer ("" when it does)
    consolidation: Mapping[str, Any] = field(default_factory=dict)  # the last consolidation pass
    settings_problem: str = ""  # why karpenter-global-settings was refused ("" when it was not)


@dataclass(frozen=True)
class Sample:
    time: float
    nodes: int
    cost: float


@dataclass(frozen=True)
class DashboardInputs:
    snapshot: Snapshot
    controller: ControllerAnswers
    history: tuple[Sample, ...] = ()
    problem: str = ""  # why the cluster view is empty or partial ("" when it is complete)


class Source(Protocol):
    def read(self) -> DashboardInputs: ...


def ask_controller(api: ControllerAPI | None) -> ControllerAnswers:
    if api is None:
        return ControllerAnswers(error="no controller URL is configured (--controller-url)")
    try:
        nodes = api.get("/api/v1/nodes")
        pending = api.get("/api/v1/pods/pending")
        decisions = api.get(f"/api/v1/decisions?limit={DECISIONS_LIMIT}")
    except ControllerError as err:
        return ControllerAnswers(error=str(err))
    if not (isinstance(nodes, dict) and isinstance(pending, dict) and isinstance(decisions, list)):
        return ControllerAnswers(error=f"the controller at {api.base_url} answered in an unexpected shape")
    cloud = nodes.get("cloud")
    cloud_problem = ""
    if isinstance(cloud, dict) and cloud.get("ready") is False:
        cloud_problem = str(cloud.get("problem") or "it does not answer")[:1024]
    return ControllerAnswers(
        "",
        _mappings(nodes.get("nodes")),
        _mappings(pending.get("pods")),
        tuple(d for d in decisions if isinstance(d, dict)),
        cloud_problem,
        consolidation if isinstance(consolidation := nodes.get("consolidation"), dict) else {},
        str(nodes.get("settingsProblem") or "")[:1024],
    )


def _mappings(value: Any) -> dict[str, Mapping[str, Any]]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, dict)}


class DashboardSource:
    def __init__(
        self,
        kube: KubeReads | None,
        controller: ControllerAPI | None,
        clock: Clock,
        cost: Callable[[Snapshot, ControllerAnswers], float],
        cache_seconds: float = 2.0,
    ) -> None:
        self._kube, self._api, self._clock, self._cost = kube, controller, clock, cost
        self._cache_seconds = cache_seconds
        self.state = ClusterState(clock)
        self._lock = threading.Lock()
        self._started = False
        self._stop = threading.Event()
        self._answers: tuple[float, ControllerAnswers] | None = None
        self._history: deque[Sample] = deque(maxlen=int(HISTORY_SECONDS / SAMPLE_SECONDS) + 1)

    def start(self) -> None:
        """Start the informers and the history sampler once (on first use)."""
        with self._lock:
            if self._started or self._kube is None:
                return
            self._started = True
        # The informers only call list and watch; ReadOnlyKube has no writing method at all.
        start_informers(cast(Kube, self._kube), self.state, self._stop)
        threading.Thread(target=self._sample_forever, name="dashboard-history", daemon=True).start()

    def close(self) -> None:
        self._stop.set()

    def _sample_forever(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            try:
                self.read()
            except Exception as err:  # the sampler must outlive any one bad read
                log.warning("dashboard history sample: %s", err)

    def controller_answers(self) -> ControllerAnswers:
        now = self._clock.now()
        with self._lock:
            cached = self._answers
        if cached is not None and now - cached[0] < self._cache_seconds:
            return cached[1]
        answers = ask_controller(self._api)
        with self._lock:
            self._answers = (now, answers)
        return answers

    def ask(self, path: str, timeout: float) -> tuple[int, Any]:
        """One answer of the controller, not cached (the explain pages); ControllerError when it
        cannot be asked."""
        if self._api is None:
            raise ControllerError("no controller URL is configured (--controller-url)")
        return self._api.answer(path, timeout)

    def compute(self, path: str, body: bytes, timeout: float) -> tuple[int, Any]:
        """A computation of the controller's (the what-if), not cached; ControllerError when it
        cannot be asked."""
        if self._api is None:
            raise ControllerError("no controller URL is configured (--controller-url)")
        return self._api.compute(path, body, timeout)

    def read(self) -> DashboardInputs:
        self.start()
        snap = self.state.snapshot()
        answers = self.controller_answers()
        problem = ""
        if self._kube is None:
            problem = "no Kubernetes API is configured (--kubeconfig, or run in a cluster)"
        elif not snap.synced:
            problem = "still reading the cluster from the Kubernetes API (or it is unreachable)"
        self._record(Sample(snap.now, len(snap.nodes), self._cost(snap, answers)), snap.synced)
        with self._lock:
            history = tuple(self._history)
        return DashboardInputs(snap, answers, history, problem)

    def _record(self, sample: Sample, synced: bool) -> None:
        if not synced:
            return
        with self._lock:
            if self._history and sample.time - self._history[-1].time < SAMPLE_SECONDS:
                return
            self._history.append(sample)
