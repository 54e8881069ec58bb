"""`EventRecorder`: Kubernetes events on pods, nodes and provisioners (spec §9.2).

Events are declared per controller (`provisioning/events.py`, `termination/events.py`, …) as
`Event` values; the one recorder of the process de-duplicates them (same object, reason and
message — or the event's own `dedupe_key` — within the event's `dedupe_seconds`, else the
recorder's 2 min, as Karpenter does) and writes core/v1 Events through the Kubernetes adapter.
A failed write is logged, never raised: events are best effort.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from controller.clock import Clock
from controller.core.timestamps import format_timestamp
from controller.kube.client import Kube
from controller.kube.errors import KubeError

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"


@dataclass(frozen=True)
class ObjectRef:
    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    api_version: str = "v1"

    @staticmethod
    def of(obj: Any, kind: str, api_version: str = "v1") -> ObjectRef:
        meta = obj.get("metadata") or {}
        return ObjectRef(
            kind, str(meta.get("name", "")), str(meta.get("namespace") or ""), str(meta.get("uid") or ""), api_version
        )


@dataclass(frozen=True)
class Event:
    ref: ObjectRef
    type: str
    reason: str
    message: str
    dedupe_key: str = ""  # defaults to object + reason + message
    dedupe_seconds: float | None = None  # defaults to the recorder's window


class EventRecorder:
    def __init__(self, kube: Kube | None, clock: Clock, dedupe_seconds: float = 120.0) -> None:
        self._kube = kube
        self._clock = clock
        self._dedupe = dedupe_seconds
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()
        self.published: list[Event] = []  # the last events, for tests and the decisions page

    def publish(self, event: Event) -> bool:
        """Write the event unless an identical one was written recently; True when written."""
        now = self._clock.now()
        key = (
            event.dedupe_key
            or f"{event.ref.kind}/{event.ref.namespace}/{event.ref.name}/{event.reason}/{event.message}"
        )
        window = self._dedupe if event.dedupe_seconds is None else event.dedupe_seconds
        with self._lock:
            if now - self._seen.get(key, -1e18) < window:
                return False
            self._seen[key] = now
            if len(self._seen) > 10_000:
                longest = max(self._dedupe, window)
                self._seen = {k: t for k, t in self._seen.items() if now - t < longest}
            self.published.append(event)
            del self.published[:-200]
        if self._kube is not None:
            try:
                self._kube.create_event(event.ref.namespace or "default", _wire(event, now))
            except (KubeError, OSError) as err:
                log.debug("recording event %s: %s", event.reason, err)
        return True


def _wire(event: Event, now: float) -> dict[str, Any]:
    ts = format_timestamp(now)
    ref = event.ref
    involved = {"kind": ref.kind, "name": ref.name, "apiVersion": ref.api_version}
    if ref.namespace:
        involved["namespace"] = ref.namespace
    if ref.uid:
        involved["uid"] = ref.uid
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{ref.name}.", "namespace": ref.namespace or "default"},
        "involvedObject": involved,
        "reason": event.reason,
        "message": event.message,
        "type": event.type,
        "source": {"component": "karpy"},
        "reportingComponent": "karpy",
        "reportingInstance": "karpy",
        "firstTimestamp": ts,
        "lastTimestamp": ts,
        "count": 1,
    }
