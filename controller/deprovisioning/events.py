"""Kubernetes events of deprovisioning (spec §9.2), on Nodes: their reasons, declared once.

The decision code returns `types.Event` values (pure data, built by `blocked()` and
`unconsolidatable()` or with the reasons below); `node_event()` turns one into the process-wide
recorder's `controller.events.Event`, with Karpenter's de-duplication: at most once per (node,
reason, message) every 2 min, `Unconsolidatable` once per node every 15 min.
"""

from __future__ import annotations

from controller.deprovisioning import types
from controller.events import Event, ObjectRef

UNCONSOLIDATABLE_DEDUP_SECONDS = 900.0

BLOCKED = "DeprovisioningBlocked"
LAUNCHING = "DeprovisioningLaunching"
WAITING_READINESS = "DeprovisioningWaitingReadiness"
WAITING_DELETION = "DeprovisioningWaitingDeletion"
TERMINATING = "DeprovisioningTerminating"
UNCONSOLIDATABLE = "Unconsolidatable"
WAITING_READINESS_MESSAGE = "Waiting on readiness to continue deprovisioning"
WAITING_DELETION_MESSAGE = "Waiting on deletion to continue deprovisioning"


def blocked(node: str, why: str) -> types.Event:
    return types.Event(node, BLOCKED, f"Cannot deprovision node due to {why}")


def unconsolidatable(node: str, why: str) -> types.Event:
    return types.Event(node, UNCONSOLIDATABLE, why)


def node_event(event: types.Event) -> Event:
    ref = ObjectRef("Node", event.node)
    if event.reason == UNCONSOLIDATABLE:
        key = f"Node/{event.node}/{event.reason}"
        return Event(ref, event.type, event.reason, event.message, key, UNCONSOLIDATABLE_DEDUP_SECONDS)
    return Event(ref, event.type, event.reason, event.message)
