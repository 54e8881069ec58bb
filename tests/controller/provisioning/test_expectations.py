"""`expectations`: which pods karpy planned and left to kube-scheduler wait for its verdict."""

from __future__ import annotations

from typing import Any

import pytest

from controller.clock import FakeClock
from controller.kube.resources import NODES, PODS, PROVISIONERS, WATCHED
from controller.provisioning.expectations import EXPECT_SECONDS, Expectation, expectation, forget, reserved, waiting
from controller.state.cluster import ClusterState
from controller.state.snapshot import Snapshot
from tests.builders.wire import make_node, make_pod, make_provisioner

NOW = 1_000_000.0


def marked(name: str, message: str = "0/2 nodes are available: 2 Insufficient cpu.", **kw: Any) -> dict[str, Any]:
    pod = make_pod(name, **kw)
    pod["status"]["conditions"][0]["message"] = message
    return pod


def snapshot(pods: list[dict[str, Any]], nodes: list[dict[str, Any]] | None = None, marked: bool = False) -> Snapshot:
    clock = FakeClock()
    clock.step(NOW - clock.now())
    state = ClusterState(clock)
    by_kind: dict[str, list[dict[str, Any]]] = {k.name: [] for k in WATCHED}
    by_kind[PROVISIONERS.name].append(make_provisioner("default"))
    by_kind[NODES.name] += nodes if nodes is not None else [make_node("n1", cpu="8")]
    by_kind[PODS.name] += pods
    for name, items in by_kind.items():
        state.replace(name, items)
    if marked:  # by deprovisioning, in memory
        state.mark_for_deletion([n["metadata"]["name"] for n in by_kind[NODES.name]])
    return state.snapshot()


def waits(snap: Snapshot, expected: dict[str, Expectation]) -> list[str]:
    return sorted(waiting(snap, expected))


def test_the_verdict_is_the_schedulers_message() -> None:
    snap = snapshot([marked("a", "0/3 nodes are available")])
    assert snap.pods["default/a"].verdict == "0/3 nodes are available"
    assert expectation(snap.pods["default/a"], "n1", NOW) == Expectation("n1", NOW, "0/3 nodes are available")


def test_a_planned_pod_waits_until_kube_scheduler_says_something_new() -> None:
    before = snapshot([marked("a")])
    expected = {"default/a": expectation(before.pods["default/a"], "n1", NOW - 10)}
    assert waits(before, expected) == ["default/a"]
    after = snapshot([marked("a", "0/3 nodes are available: 3 Insufficient cpu.")])  # tried again, failed
    assert waits(after, expected) == []


def test_a_pod_karpy_planned_nothing_for_does_not_wait() -> None:
    snap = snapshot([marked("a"), marked("b")])
    expected = {"default/a": expectation(snap.pods["default/a"], "n1", NOW)}
    assert waits(snap, expected) == ["default/a"]
    assert waits(snap, {}) == []


def test_a_pod_waits_no_longer_than_the_bound() -> None:
    snap = snapshot([marked("a")])
    pod = snap.pods["default/a"]
    assert waits(snap, {"default/a": expectation(pod, "n1", NOW - EXPECT_SECONDS + 1)}) == ["default/a"]
    assert waits(snap, {"default/a": expectation(pod, "n1", NOW - EXPECT_SECONDS)}) == []


@pytest.mark.parametrize("node", ["gone", "deleting", "marked for deletion"])
def test_a_pod_does_not_wait_for_a_node_that_is_gone_or_going(node: str) -> None:
    nodes = {"gone": [], "deleting": [make_node("n1", cpu="8", deleting=True)]}.get(node, [make_node("n1", cpu="8")])
    snap = snapshot([marked("a")], nodes=nodes, marked=node == "marked for deletion")
    assert waits(snap, {"default/a": expectation(snap.pods["default/a"], "n1", NOW)}) == []


def test_the_waiting_pods_count_on_the_node_they_are_expected_on() -> None:
    snap = snapshot([marked("a", cpu="1"), marked("b", cpu="2")], nodes=[make_node("n1"), make_node("n2")])
    expected = {
        "default/a": expectation(snap.pods["default/a"], "n1", NOW),
        "default/b": expectation(snap.pods["default/b"], "n2", NOW),
    }
    got = reserved(snap, waiting(snap, expected))
    assert {node: [p.key for p in pods] for node, pods in got.items()} == {"n1": ["default/a"], "n2": ["default/b"]}


def test_the_expectations_of_pods_no_longer_pending_are_forgotten() -> None:
    snap = snapshot([marked("a"), make_pod("bound", node="n1")])
    expected = {key: Expectation("n1", NOW, "") for key in ("default/a", "default/bound", "default/gone")}
    forget(snap, expected)
    assert list(expected) == ["default/a"]
