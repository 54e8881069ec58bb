"""Kubernetes events of deprovisioning (spec §9.2), on Nodes.

The decision code returns `commands.Event` values (pure data); `node_event()` turns one into the
process-wide recorder's `controller.events.Event`, with Karpenter's de-duplication: at most once
per (node, reason, message) every 2 min, `Unconsolidatable` once per node every 15 min.
"""

from __future__ import annotations

from controller.deprovisioning import commands
from controller.events import Event, ObjectRef

UNCONSOLIDATABLE_DEDUP_SECONDS = 900.0

LAUNCHING = "DeprovisioningLaunching"
WAITING_READINESS = "DeprovisioningWaitingReadiness"
TERMINATING = "DeprovisioningTerminating"
UNCONSOLIDATABLE = "Unconsolidatable"
WAITING_READINESS_MESSAGE = "Waiting on readiness to continue deprovisioning"


def node_event(event: commands.Event) -> Event:
    ref = ObjectRef("Node", event.node)
    if event.reason == UNCONSOLIDATABLE:
        key = f"Node/{event.node}/{event.reason}"
        return Event(ref, event.type, event.reason, event.message, key, UNCONSOLIDATABLE_DEDUP_SECONDS)
    return Event(ref, event.type, event.reason, event.message)
