"""`DecisionLog`: a bounded, in-memory record of what the controllers decided, and why.

Each `Decision` says what was launched or removed (node, instance type, zone, capacity type,
price), for which pods, and why a pod or node was left alone. Deprovisioning records each
command it carries out (`<method>/<delete|replace>`: emptiness, expiration, consolidation) with
its reason and the hourly prices before and after, each command that failed, and each node it
finds drifted (why). The HTTP server serves the most recent ones as JSON at `/api/v1/decisions`
(newest first) for the dashboard.

Beyond the ring it keeps each subject's last evaluation (`latest(subject)`): `evaluated()` is
called for every pod of every provisioning pass, so the answer carries the time of the pod's
last evaluation, its outcome and reason, and `since`, when it began saying the same; the ring
gets an entry only when the answer changed (no spam at 40,000 pending pods). `retain()` forgets
the subjects that are gone (pods deleted), so memory follows the cluster. Thread-safe.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Container
from dataclasses import asdict, dataclass, field
from typing import Any

from controller.clock import Clock
from controller.core.timestamps import format_timestamp

LAUNCHED = "launched"
LAUNCH_FAILED = "launch-failed"
UNSCHEDULABLE = "unschedulable"
IGNORED = "ignored"
NOMINATED = "nominated"
TERMINATED = "terminated"
WAITING = "waiting"
GARBAGE_COLLECTED = "garbage-collected"
DEPROVISIONING_FAILED = "deprovisioning-failed"
DRIFTED = "drifted"  # a node found drifted from its Provisioner or AWSNodeTemplate (annotated)


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


@dataclass(frozen=True)
class Evaluation:
    """A subject's last evaluation (`decision.time`) and since when it has said the same."""

    decision: Decision
    since: float


LATEST_LIMIT = 500_000  # a guard only: `retain` keeps the latest answers to subjects that exist


class DecisionLog:
    def __init__(self, clock: Clock, maxlen: int = 1000) -> None:
        self._clock = clock
        self._items: deque[Decision] = deque(maxlen=maxlen)
        self._lock = threading.Lock()
        self._latest: dict[str, Evaluation] = {}  # subject → its last evaluation

    def _stamped(self, decision: Decision) -> Decision:
        return decision if decision.time else Decision(**{**decision.__dict__, "time": self._clock.now()})

    def record(self, decision: Decision) -> None:
        decision = self._stamped(decision)
        with self._lock:
            self._items.append(decision)

    def record_once(self, decision: Decision) -> None:
        """Record unless the last decision about the same subject said the same (no spam); the
        subject's latest answer keeps the time it was first said."""
        self._keep(decision, log=True, restamp=False)

    def evaluated(self, decision: Decision, log: bool = True) -> None:
        """`decision` is the subject's evaluation now: its latest answer takes this time (and keeps
        `since` while it says the same); recorded in the ring (with `log`) only when it changed."""
        self._keep(decision, log, restamp=True)

    def _keep(self, decision: Decision, log: bool, restamp: bool) -> None:
        decision = self._stamped(decision)
        with self._lock:
            last = self._latest.get(decision.subject)
            same = last is not None and _says(last.decision) == _says(decision)
            if same and last is not None and not restamp:
                return
            since = last.since if same and last is not None else decision.time
            if len(self._latest) >= LATEST_LIMIT and last is None:
                self._latest.clear()
            self._latest[decision.subject] = Evaluation(decision, since)
            if log and not same:
                self._items.append(decision)

    def latest(self, subject: str) -> Decision | None:
        """The last answer kept about `subject` (e.g. why pod/ns/name is pending, and when)."""
        found = self.evaluation(subject)
        return found.decision if found is not None else None

    def evaluation(self, subject: str) -> Evaluation | None:
        with self._lock:
            return self._latest.get(subject)

    def outcomes(self, prefix: str) -> dict[str, str]:
        """The action of each last evaluation kept about a subject under `prefix`, keyed by the
        subject without it (`outcomes("pod/")`: pod key → launched, unschedulable, …), at once."""
        cut = len(prefix)
        with self._lock:
            return {s[cut:]: e.decision.action for s, e in self._latest.items() if s.startswith(prefix)}

    def retain(self, prefix: str, keep: Container[str]) -> None:
        """Forget the latest answers about subjects under `prefix` that are not in `keep`."""
        with self._lock:
            gone = [s for s in self._latest if s.startswith(prefix) and s not in keep]
            for subject in gone:
                del self._latest[subject]

    def recent(self, limit: int = 200) -> list[Decision]:
        with self._lock:
            items = list(self._items)
        return items[::-1][:limit]


def _says(decision: Decision) -> tuple[str, str, str]:
    return decision.controller, decision.action, decision.reason
