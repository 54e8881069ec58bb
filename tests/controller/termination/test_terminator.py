"""Drain plans: what is evicted, in which order, and what is waited for (spec §7)."""

from __future__ import annotations

import dataclasses

from controller.core import labels as L
from controller.state.snapshot import NodeView
from controller.state.views import node_view, pod_view
from controller.termination.terminator import drain_plan
from tests.builders.wire import make_node, make_pod

NOW = 1_704_067_260.0  # 2024-01-01T00:01:00Z


def node_with(*pods: dict) -> NodeView:  # type: ignore[type-arg]
    return dataclasses.replace(node_view(make_node("n1", deleting=True)), pods=tuple(pod_view(p) for p in pods))


def keys(pods: tuple) -> list[str]:  # type: ignore[type-arg]
    return sorted(p.name for p in pods)


def test_non_critical_pods_first_critical_last() -> None:
    plan = drain_plan(
        node_with(make_pod("app", node="n1"), make_pod("dns", node="n1", priority_class="system-cluster-critical")), NOW
    )
    assert keys(plan.evict) == ["app"]
    plan = drain_plan(node_with(make_pod("dns", node="n1", priority_class="system-cluster-critical")), NOW)
    assert keys(plan.evict) == ["dns"]


def test_daemonset_static_and_terminal_pods_are_skipped() -> None:
    mirror = make_pod("static", node="n1", owner_kind="Node")
    plan = drain_plan(
        node_with(
            make_pod("ds", node="n1", owner_kind="DaemonSet"), mirror, make_pod("done", node="n1", phase="Succeeded")
        ),
        NOW,
    )
    assert plan.drained


def test_do_not_evict_pods_are_waited_for_not_evicted() -> None:
    plan = drain_plan(node_with(make_pod("keep", node="n1", annotations={L.DO_NOT_EVICT: "true"})), NOW)
    assert plan.evict == () and keys(plan.do_not_evict) == ["keep"] and not plan.drained


def test_terminating_pods_are_waited_for_unless_stuck() -> None:
    leaving = make_pod("leaving", node="n1")
    leaving["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:30Z"
    assert keys(drain_plan(node_with(leaving), NOW).waiting) == ["leaving"]
    assert drain_plan(node_with(leaving), NOW + 120).drained
