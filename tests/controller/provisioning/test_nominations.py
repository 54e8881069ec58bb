"""`nominations.nominations`: which pods karpy nominates where, which nominations it clears."""

from __future__ import annotations

from typing import Any

import pytest

import controller.provisioning.nominations as nominations_module
from controller.clock import FakeClock
from controller.kube.resources import NODES, PODS, PROVISIONERS, WATCHED
from controller.provisioning.nominations import nominations, status_patch
from controller.state.cluster import ClusterState
from controller.state.snapshot import Snapshot
from tests.builders.wire import make_node, make_pod, make_provisioner

ZONE = "topology.kubernetes.io/zone"


def spread(app: str = "web", skew: int = 1, key: str = ZONE) -> dict[str, Any]:
    c = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": app}}}  # fmt: skip
    return {"topologySpreadConstraints": [c]}


def zone_anti(app: str = "web") -> dict[str, Any]:
    t = {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": app}}}
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [t]}}}


def nominated(pod: dict[str, Any], node: str) -> dict[str, Any]:
    pod["status"]["nominatedNodeName"] = node
    return pod


def snapshot(pods: list[dict[str, Any]], nodes: list[dict[str, Any]] | None = None) -> Snapshot:
    state = ClusterState(FakeClock())
    by_kind: dict[str, list[dict[str, Any]]] = {k.name: [] for k in WATCHED}
    by_kind[PROVISIONERS.name].append(make_provisioner("default"))
    by_kind[NODES.name] += nodes if nodes is not None else [make_node("n1", cpu="8"), make_node("n2", cpu="8")]
    by_kind[PODS.name] += pods
    for name, items in by_kind.items():
        state.replace(name, items)
    return state.snapshot()


def written(snap: Snapshot, planned: list[tuple[str, str]], **kw: Any) -> list[tuple[str, str]]:
    return [(n.pod.name, n.node) for n in nominations(snap, planned, **kw)]


def test_a_planned_pending_pod_is_nominated_to_its_node() -> None:
    snap = snapshot([make_pod("a"), make_pod("b")])
    assert written(snap, [("default/a", "n1"), ("default/b", "n2")]) == [("a", "n1"), ("b", "n2")]


def test_no_write_when_the_nomination_is_already_there() -> None:
    snap = snapshot([nominated(make_pod("a"), "n1")])
    assert written(snap, [("default/a", "n1")]) == []


def test_a_nomination_elsewhere_is_moved() -> None:
    snap = snapshot([nominated(make_pod("a"), "n2")])
    assert written(snap, [("default/a", "n1")]) == [("a", "n1")]


def test_never_a_bound_deleting_terminal_gated_or_gone_pod() -> None:
    deleting = make_pod("d")
    deleting["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:01Z"
    pods = [
        make_pod("bound", node="n2"),
        deleting,
        make_pod("done", phase="Succeeded"),
        make_pod("gated", schedulingGates=[{"name": "other.example/gate"}]),
    ]
    snap = snapshot(pods)
    planned = [(f"default/{n}", "n1") for n in ("bound", "d", "done", "gated", "gone")]
    assert written(snap, planned) == []


def test_never_onto_a_node_that_is_gone_or_being_deleted() -> None:
    going = make_node("n2", cpu="8")
    going["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:01Z"
    snap = snapshot([make_pod("a"), make_pod("b")], [make_node("n1", cpu="8"), going])
    assert written(snap, [("default/a", "n2"), ("default/b", "n9")]) == []


def test_a_pod_with_a_spread_its_selector_does_not_fix_is_not_nominated() -> None:
    """kube-scheduler counts a pod nominated to a node in the spread of every other pod of the
    group evaluated there: the node would be closed to the group whenever its zone is at the
    minimum."""
    anyway = {**spread()["topologySpreadConstraints"][0], "whenUnsatisfiable": "ScheduleAnyway"}
    pods = [make_pod("zonal", **spread()), make_pod("host", **spread(key="kubernetes.io/hostname"))]
    pods += [make_pod("other-key", nodeSelector={"team": "a"}, **spread())]
    pods += [make_pod("anyway", topologySpreadConstraints=[anyway])]
    snap = snapshot(pods)
    planned = [(f"default/{n}", "n1") for n in ("zonal", "host", "other-key", "anyway")]
    assert written(snap, planned) == [("anyway", "n1")]


def test_a_spread_pinned_to_its_zone_is_nominated_however_many_a_node() -> None:
    """A pod whose node selector fixes the spread's key (karpy's topology gate pins it) counts
    only its own domain: the nominated pods raise the minimum with the node's count."""
    pods = [make_pod(n, nodeSelector={ZONE: "zone-a"}, **spread()) for n in ("a", "b", "c")]
    snap = snapshot(pods)
    assert written(snap, [(f"default/{n}", "n1") for n in "abc"]) == [("a", "n1"), ("b", "n1"), ("c", "n1")]


def test_zone_anti_affinity_nominates_one_pod_of_the_term_a_node_counting_those_there() -> None:
    snap = snapshot([make_pod("a", **zone_anti()), make_pod("b", **zone_anti())])
    assert written(snap, [("default/a", "n1"), ("default/b", "n1")]) == [("a", "n1")]
    snap = snapshot([nominated(make_pod("a", **zone_anti()), "n1"), make_pod("b", **zone_anti())])
    assert written(snap, [("default/b", "n1"), ("default/b", "n2")]) == [("b", "n2")]


def test_a_nomination_to_a_node_that_is_gone_is_cleared_unless_asked_not_to() -> None:
    snap = snapshot([nominated(make_pod("a"), "gone"), nominated(make_pod("b"), "n1")])
    assert written(snap, []) == [("a", "")]
    assert written(snap, [], clear_stale=False) == []


def test_at_most_limit_writes() -> None:
    snap = snapshot([make_pod(n) for n in "abc"] + [nominated(make_pod("z"), "gone")])
    assert written(snap, [(f"default/{n}", "n1") for n in "abc"], limit=2) == [("a", "n1"), ("b", "n1")]


def test_status_patch_sets_or_clears_the_one_field() -> None:
    assert status_patch("n1") == {"status": {"nominatedNodeName": "n1"}}
    assert status_patch("") == {"status": {"nominatedNodeName": None}}


def test_at_most_outstanding_pods_nominated_at_once_in_the_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each nominated pod costs kube-scheduler a copy of its node's state on every attempt."""
    monkeypatch.setattr(nominations_module, "OUTSTANDING", 3)
    snap = snapshot([nominated(make_pod("there"), "n2"), *(make_pod(n) for n in "abc")])
    assert written(snap, [(f"default/{n}", "n1") for n in "abc"]) == [("a", "n1"), ("b", "n1")]
    snap = snapshot([nominated(make_pod(n), "n2") for n in "xyz"] + [nominated(make_pod("gone"), "gone")])
    assert written(snap, [("default/x", "n1")]) == [("gone", "")]  # at the cap: no new one, clearing goes on
