"""Whether the cloud provider answers: the gate of every job that launches or lists instances.

A bad credential or an unreachable endpoint must not crash-loop the controller (issue 20,
defect 5). The cloud's refresh job (`main.AWSRefresh`) reports each attempt to `CloudHealth`:
`ok()` or `failed(problem)`. While the cloud does not answer the controller stays up and says
so everywhere an operator looks:

- the log: one error line per new problem ("the cloud provider does not answer: …"), one info
  line when it answers again;
- events: `CloudProviderUnavailable` (Warning) on every Provisioner, re-published while it lasts
  (the recorder's de-duplication window);
- `/readyz` answers 503 with the problem on the leader (`App.ready`), `/api/v1/status` and
  `/api/v1/nodes` carry `cloud: {ready, problem}` (the dashboard's banner);
- the gauge `karpy_cloudprovider_ready` is 0;
- the gated jobs (provisioning, deprovisioning, garbage collection, interruption) skip their
  passes, so nothing is launched or judged leaked on a cloud that cannot be read.

The next good answer opens the gate again by itself. Providers without a refresh job (the
simulated cloud) are ready from the start.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from controller.clock import Clock
from controller.events import WARNING, Event, EventRecorder, ObjectRef
from controller.metrics import CLOUDPROVIDER_READY
from controller.state.snapshot import Snapshot

log = logging.getLogger(__name__)

UNAVAILABLE = "CloudProviderUnavailable"
NOT_CHECKED = "the cloud provider has not been checked yet"


class CloudHealth:
    def __init__(self, clock: Clock, provider: str, checked: bool = True) -> None:
        self._clock, self._provider = clock, provider
        self._lock = threading.Lock()
        self._ready = checked
        self._problem = "" if checked else NOT_CHECKED
        self._since = clock.now()
        CLOUDPROVIDER_READY.labels(provider=provider).set(1 if checked else 0)

    def ready(self) -> bool:
        with self._lock:
            return self._ready

    def problem(self) -> str:
        with self._lock:
            return self._problem

    def ok(self) -> None:
        with self._lock:
            was, self._ready, self._problem = self._ready, True, ""
            if not was:
                self._since = self._clock.now()
        CLOUDPROVIDER_READY.labels(provider=self._provider).set(1)
        if not was:
            log.info("the cloud provider answers again", extra={"provider": self._provider})

    def failed(self, problem: str) -> bool:
        """Record a failed check; True when the problem is new (the caller publishes events)."""
        with self._lock:
            new = self._ready or problem != self._problem
            if self._ready:
                self._since = self._clock.now()
            self._ready, self._problem = False, problem
        CLOUDPROVIDER_READY.labels(provider=self._provider).set(0)
        if new:
            log.error(
                "the cloud provider does not answer: %s; launching nothing until it does (retrying)",
                problem,
                extra={"provider": self._provider},
            )
        return new

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {"ready": self._ready, "problem": self._problem, "since": self._since}


def unavailable_events(snapshot: Snapshot, problem: str) -> list[Event]:
    """A Warning on every Provisioner: its pods will not get capacity until the cloud answers."""
    message = f"Cannot launch or list instances: {problem}"[:1024]
    return [
        Event(ObjectRef.of(p.obj, "Provisioner", "karpenter.sh/v1alpha5"), WARNING, UNAVAILABLE, message)
        for p in sorted(snapshot.provisioners.values(), key=lambda p: p.name)
    ]


def publish_unavailable(recorder: EventRecorder, snapshot: Snapshot, problem: str) -> None:
    for event in unavailable_events(snapshot, problem):
        recorder.publish(event)
