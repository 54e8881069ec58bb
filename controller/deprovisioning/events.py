"""Kubernetes events of deprovisioning (spec §9.2), recorded with Karpenter's de-duplication.

`EventRecorder.record(event)` writes a core/v1 Event on the Node through the `Kube` adapter,
at most once per (reason, node, message) every 2 min — `Unconsolidatable` once per node every
15 min. Recording never raises: an event is not worth failing a deprovisioning action for.
"""

from __future__ import annotations

import logging
from typing import Any

from controller.clock import Clock
from controller.core.timestamps import format_timestamp
from controller.deprovisioning.commands import Event
from controller.kube.client import Kube
from controller.kube.errors import KubeError

log = logging.getLogger(__name__)

DEDUP_SECONDS = 120.0
UNCONSOLIDATABLE_DEDUP_SECONDS = 900.0
NAMESPACE = "default"

LAUNCHING = "DeprovisioningLaunching"
WAITING_READINESS = "DeprovisioningWaitingReadiness"
TERMINATING = "DeprovisioningTerminating"
WAITING_READINESS_MESSAGE = "Waiting on readiness to continue deprovisioning"


def kube_event(event: Event, now: float) -> dict[str, Any]:
    stamp = format_timestamp(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{event.node}.", "namespace": NAMESPACE},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": event.node},
        "reason": event.reason,
        "message": event.message,
        "type": event.type,
        "source": {"component": "karpy"},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


class EventRecorder:
    def __init__(self, kube: Kube, clock: Clock) -> None:
        self._kube = kube
        self._clock = clock
        self._seen: dict[tuple[str, ...], float] = {}
        self.recorded: list[Event] = []

    def record(self, event: Event) -> None:
        now = self._clock.now()
        if event.reason == "Unconsolidatable":
            key: tuple[str, ...] = (event.reason, event.node)
            ttl = UNCONSOLIDATABLE_DEDUP_SECONDS
        else:
            key, ttl = (event.reason, event.node, event.message), DEDUP_SECONDS
        if now < self._seen.get(key, float("-inf")) + ttl:
            return
        self._seen[key] = now
        self.recorded.append(event)
        try:
            self._kube.create_event(NAMESPACE, kube_event(event, now))
        except KubeError as err:
            log.debug("recording event %s on node %s: %s", event.reason, event.node, err)
