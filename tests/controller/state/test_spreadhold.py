"""Topology-gated pods wait for a member of their spread that escaped the gate (`state/spreadhold.py`)."""

from __future__ import annotations

from typing import Any

from controller.clock import FakeClock
from controller.core import labels as L
from controller.core.timestamps import format_timestamp
from controller.kube.resources import NODES, PODS
from controller.state.schedulinginput import provisionable
from controller.state.snapshot import PodView
from controller.state.spreadhold import HOLD_SECONDS, spread_holds
from controller.state.views import pod_view
from tests.builders.wire import make_node, make_pod
from tests.fakes.world import state_of

NOW = 1_700_000_000.0
SPREAD = [{"maxSkew": 1, "topologyKey": L.ZONE, "whenUnsatisfiable": "DoNotSchedule",
           "labelSelector": {"matchLabels": {"app": "s"}}}]  # fmt: skip


def spread_pod(name: str, *, gated: bool = False, age: float = 10.0, labels: dict[str, str] | None = None,
               **spec: Any) -> dict[str, Any]:  # fmt: skip
    pod = make_pod(name, labels=labels or {"app": "s"}, pending=not gated, topologySpreadConstraints=SPREAD, **spec)
    pod["metadata"]["creationTimestamp"] = format_timestamp(NOW - age)
    if gated:
        pod["spec"]["schedulingGates"] = [{"name": L.TOPOLOGY_GATE}]
    return pod


def views(*pods: dict[str, Any]) -> list[PodView]:
    return [pod_view(p) for p in pods]


def holds(*pods: dict[str, Any]) -> dict[str, str]:
    every = views(*pods)
    return spread_holds([p for p in every if p.provisionable], every, NOW)


def test_gated_pods_wait_while_a_member_created_without_the_gate_is_pending() -> None:
    out = holds(spread_pod("g1", gated=True), spread_pod("g2", gated=True), spread_pod("escaped"))
    assert sorted(out) == ["default/g1", "default/g2"]  # the escaped pod itself is provisioned for
    assert "default/escaped" in out["default/g1"] and "kube-scheduler" in out["default/g1"]


def test_nothing_waits_once_the_member_is_bound_pinned_or_gated_itself() -> None:
    gated = spread_pod("g1", gated=True)
    assert holds(gated, spread_pod("bound", node="n1")) == {}
    assert holds(gated, spread_pod("pinned", nodeSelector={L.ZONE: "us-west-2a"})) == {}  # its zone is known
    assert holds(gated, spread_pod("g2", gated=True)) == {}  # gated: karpy chooses its zone too
    other_gate = spread_pod("quota")
    other_gate["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    assert holds(gated, other_gate) == {}  # scheduled by no one until its own gate goes


def test_only_members_the_spread_counts_hold_it() -> None:
    gated = spread_pod("g1", gated=True)
    assert holds(gated, spread_pod("other-app", labels={"app": "t"})) == {}  # the selector does not match
    assert holds(gated, spread_pod("elsewhere", namespace="team-b")) == {}  # another namespace
    # a member with no spread of its own still counts in the group's zones
    plain = make_pod("plain", labels={"app": "s"})
    plain["metadata"]["creationTimestamp"] = format_timestamp(NOW - 1)
    assert list(holds(gated, plain)) == ["default/g1"]


def test_a_member_pending_longer_than_the_bound_holds_nothing() -> None:
    gated = spread_pod("g1", gated=True)
    assert list(holds(gated, spread_pod("recent", age=HOLD_SECONDS - 1))) == ["default/g1"]
    assert holds(gated, spread_pod("stuck", age=HOLD_SECONDS + 1)) == {}


def test_a_held_pod_is_not_provisionable_and_says_why() -> None:
    state = state_of(
        {PODS.name: [spread_pod("g1", gated=True), spread_pod("escaped"), make_pod("other", labels={"app": "t"})],
         NODES.name: [make_node("n1")]},
        FakeClock(NOW),
    )  # fmt: skip
    found = provisionable(state.snapshot())
    assert sorted(p.key for p in found.pending) == ["default/escaped", "default/other"]
    assert [(p.key, "default/escaped" in why) for p, why in found.held] == [("default/g1", True)]


def test_an_unpinned_member_waits_while_a_pinned_one_is_not_bound() -> None:
    """kube-scheduler counts the pinned pod only once it is bound: a plan counting it now would
    launch into a zone kube-scheduler refuses for the unpinned one."""
    pinned = spread_pod("pinned", nodeSelector={L.ZONE: "us-west-2a"})
    out = holds(spread_pod("escaped"), pinned)
    assert list(out) == ["default/escaped"] and "default/pinned" in out["default/escaped"]
    assert holds(spread_pod("escaped"), spread_pod("pinned", node="n1", nodeSelector={L.ZONE: "us-west-2a"})) == {}
    assert holds(spread_pod("escaped", age=HOLD_SECONDS + 1), pinned) == {}  # not for ever
    other = spread_pod("other", labels={"app": "t"}, nodeSelector={L.ZONE: "us-west-2a"})
    assert holds(spread_pod("escaped"), other) == {}  # the spread (app=s) does not count it


def test_a_member_waiting_itself_holds_no_one_and_pinned_pods_never_wait() -> None:
    pinned = spread_pod("pinned", nodeSelector={L.ZONE: "us-west-2a"})
    gated = spread_pod("g1", gated=True)
    out = holds(gated, spread_pod("escaped"), pinned)
    assert sorted(out) == ["default/escaped", "default/g1"]  # g1 for the escaped pod, it for the pinned one
    assert "default/pinned" not in out
