"""`DecisionLog`: a bounded, in-memory record of what the controllers decided, and why.

Each `Decision` says what was launched or removed (node, instance type, zone, capacity type,
price), for which pods, and why a pod or node was left alone. Deprovisioning records each
command it carries out (`<method>/<delete|replace>`: emptiness, expiration, consolidation) with
its reason and the hourly prices before and after, and each command that failed. The HTTP server
serves the most recent ones as JSON at `/api/v1/decisions` (newest first) for the dashboard;
`latest(subject)` keeps the last deduplicated answer per subject (why a pod is pending) beyond
the ring. Thread-safe.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any

from controller.clock import Clock
from controller.core.timestamps import format_timestamp

LAUNCHED = "launched"
LAUNCH_FAILED = "launch-failed"
UNSCHEDULABLE = "unschedulable"
IGNORED = "ignored"
TERMINATED = "terminated"
WAITING = "waiting"
GARBAGE_COLLECTED = "garbage-collected"
DEPROVISIONING_FAILED = "deprovisioning-failed"


@dataclass(frozen=True)
class Decision:
    controller: str
    action: str
    subject: str  # "node/<name>", "pod/<ns>/<name>", "instance/<provider id>"
    reason: str = ""
    pods: tuple[str, ...] = ()
    provisioner: str = ""
    instance_type: str = ""
    zone: str = ""
    capacity_type: str = ""
    price: float | None = None
    price_before: float | None = None  # deprovisioning: the removed nodes' hourly price
    price_after: float | None = None  # deprovisioning: the replacements' hourly price (0 for a delete)
    time: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if v not in ("", (), None, {})}
        out["pods"] = list(self.pods)
        out["time"] = format_timestamp(self.time)
        return out


class DecisionLog:
    def __init__(self, clock: Clock, maxlen: int = 1000) -> None:
        self._clock = clock
        self._items: deque[Decision] = deque(maxlen=maxlen)
        self._lock = threading.Lock()
        self._last_reason: dict[str, str] = {}
        self._latest: dict[str, Decision] = {}  # subject → its last deduplicated decision

    def _stamped(self, decision: Decision) -> Decision:
        return decision if decision.time else Decision(**{**decision.__dict__, "time": self._clock.now()})

    def record(self, decision: Decision) -> None:
        decision = self._stamped(decision)
        with self._lock:
            self._items.append(decision)

    def record_once(self, decision: Decision) -> None:
        """Record unless the last decision about the same subject said the same (no spam)."""
        key = f"{decision.controller}/{decision.subject}"
        text = f"{decision.action}/{decision.reason}"
        with self._lock:
            if self._last_reason.get(key) == text:
                return
            self._last_reason[key] = text
            if len(self._last_reason) > 20_000:
                self._last_reason.clear()
                self._latest.clear()
        decision = self._stamped(decision)
        with self._lock:
            self._latest[decision.subject] = decision
        self.record(decision)

    def latest(self, subject: str) -> Decision | None:
        """The last decision `record_once` kept about `subject` (e.g. why pod/ns/name is pending)."""
        with self._lock:
            return self._latest.get(subject)

    def recent(self, limit: int = 200) -> list[Decision]:
        with self._lock:
            items = list(self._items)
        return items[::-1][:limit]
