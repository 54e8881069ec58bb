"""Termination events (spec §9.2): `Evicted` on pods, `FailedDraining` on nodes."""

from __future__ import annotations

from controller.events import NORMAL, WARNING, Event, ObjectRef
from controller.state.snapshot import NodeView, PodView


def evicted(pod: PodView) -> Event:
    return Event(ObjectRef("Pod", pod.name, pod.namespace, pod.uid), NORMAL, "Evicted", "Evicted pod")


def failed_draining(node: NodeView, error: str) -> Event:
    ref = ObjectRef("Node", node.name, "", str((node.obj.get("metadata") or {}).get("uid") or ""))
    return Event(ref, WARNING, "FailedDraining", f"Failed to drain node, {error}")
