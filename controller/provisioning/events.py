"""Provisioning events (spec §9.2): `Nominated` and `FailedScheduling` on pods."""

from __future__ import annotations

from controller.events import NORMAL, WARNING, Event, ObjectRef
from controller.state.snapshot import PodView


def _ref(pod: PodView) -> ObjectRef:
    return ObjectRef("Pod", pod.name, pod.namespace, pod.uid)


def nominated(pod: PodView, node: str) -> Event:
    return Event(_ref(pod), NORMAL, "Nominated", f"Pod should schedule on node: {node}")


def failed_scheduling(pod: PodView, error: str) -> Event:
    return Event(_ref(pod), WARNING, "FailedScheduling", f"Failed to schedule pod, {error}")
