"""Candidate eligibility, blocking rules and disruption cost (spec §6.2)."""

from __future__ import annotations

import pytest

from controller.core import labels as L
from controller.core.labels import POD_DELETION_COST
from controller.deprovisioning.candidates import (
    by_disruption_cost,
    candidates,
    disruption_cost,
    filter_candidates,
    new_candidate,
)
from controller.state.snapshot import PdbView
from tests.builders.deprovisioning import (
    LARGE,
    at,
    instance_type,
    make_inputs,
    make_node,
    make_pdb,
    make_pod,
    make_provisioner,
)


def test_a_plain_owned_node_is_a_candidate_with_its_offering_price() -> None:
    node = make_node("n1", pods=[make_pod("a")])
    cand = new_candidate(node, make_inputs([node]))
    assert cand is not None
    assert cand.price == 0.20 and cand.capacity_type == "on-demand" and [p.key for p in cand.pods] == ["default/a"]


NOT_CANDIDATES = {
    "no provisioner label": dict(labels={L.CAPACITY_TYPE: "on-demand", L.ZONE: "zone-a", L.INSTANCE_TYPE: "medium"}),
    "unknown provisioner": dict(provisioner="other"),
    "instance type not offered": dict(instance_type=instance_type("exotic", 4, price=0.1)),
    "not initialized": dict(initialized=False),
    "nominated": dict(nominated=True),
    "being deleted": dict(deleting=True),
    "marked for deletion": dict(marked_for_deletion=True),
}


@pytest.mark.parametrize("overrides", NOT_CANDIDATES.values(), ids=NOT_CANDIDATES.keys())
def test_nodes_that_are_never_candidates(overrides: dict[str, object]) -> None:
    node = make_node("n1", **overrides)  # type: ignore[arg-type]
    assert new_candidate(node, make_inputs([node])) is None


def test_candidate_pods_exclude_daemonset_static_terminal_and_terminating_pods() -> None:
    pods = [
        make_pod("app"),
        make_pod("ds", owner_kind="DaemonSet"),
        make_pod("static", owner_kind="Node"),
        make_pod("done", terminal=True),
        make_pod("going", deleting=True),
    ]
    node = make_node("n1", pods=pods)
    cand = new_candidate(node, make_inputs([node]))
    assert cand is not None and [p.key for p in cand.pods] == ["default/app"]


def test_candidates_come_in_creation_order_then_name() -> None:
    nodes = [make_node("b", created=at(10)), make_node("a", created=at(10)), make_node("z", created=at(0))]
    assert [c.name for c in candidates(make_inputs(nodes), lambda c: True)] == ["z", "a", "b"]


BLOCKING = {
    "pdb allowing no disruption": ([make_pdb(allowed=0)], {}, "pdb default/pdb prevents pod evictions"),
    "do-not-evict pod": ([], {L.DO_NOT_EVICT: "true"}, "pod default/a has do not evict annotation"),
}


@pytest.mark.parametrize(("pdbs", "annotations", "why"), BLOCKING.values(), ids=BLOCKING.keys())
def test_blocked_candidates_are_filtered_with_an_event(
    pdbs: list[PdbView], annotations: dict[str, str], why: str
) -> None:
    node = make_node("n1", pods=[make_pod("a", annotations=annotations)])
    snap = make_inputs([node], pdbs=pdbs)
    kept, events = filter_candidates(candidates(snap, lambda c: True), snap)
    assert kept == []
    assert [(e.node, e.reason, e.message) for e in events] == [
        ("n1", "DeprovisioningBlocked", f"Cannot deprovision node due to {why}")
    ]


NOT_BLOCKING = {
    "pdb allows a disruption": ([make_pdb(allowed=1)], {}),
    "pdb of another namespace": ([make_pdb(allowed=0, namespace="other")], {}),
    "pdb selecting other pods": ([make_pdb(allowed=0, app="db")], {}),
    "do-not-evict not true": ([], {L.DO_NOT_EVICT: "false"}),
}


@pytest.mark.parametrize(("pdbs", "annotations"), NOT_BLOCKING.values(), ids=NOT_BLOCKING.keys())
def test_candidates_that_stay(pdbs: list[PdbView], annotations: dict[str, str]) -> None:
    node = make_node("n1", pods=[make_pod("a", annotations=annotations)])
    snap = make_inputs([node], pdbs=pdbs)
    kept, events = filter_candidates(candidates(snap, lambda c: True), snap)
    assert [c.name for c in kept] == ["n1"] and events == []


def test_a_do_not_evict_daemonset_pod_does_not_block() -> None:
    node = make_node("n1", pods=[make_pod("ds", owner_kind="DaemonSet", annotations={L.DO_NOT_EVICT: "true"})])
    snap = make_inputs([node])
    kept, _ = filter_candidates(candidates(snap, lambda c: True), snap)
    assert [c.name for c in kept] == ["n1"]


def test_disruption_cost_counts_pods_deletion_cost_and_priority() -> None:
    prov = make_provisioner()
    plain = make_node("n", pods=[make_pod("a"), make_pod("b")])
    assert disruption_cost(plain, prov.provisioner, at(0)) == 2.0
    costly = make_node("n", pods=[make_pod("a", annotations={POD_DELETION_COST: str(2**27)}, priority=2**25)])
    assert disruption_cost(costly, prov.provisioner, at(0)) == 3.0
    clamped = make_node("n", pods=[make_pod("a", priority=2**31 - 1)])
    assert disruption_cost(clamped, prov.provisioner, at(0)) == 10.0
    garbage = make_node("n", pods=[make_pod("a", annotations={POD_DELETION_COST: "lots"})])
    assert disruption_cost(garbage, prov.provisioner, at(0)) == 1.0


def test_disruption_cost_scales_with_lifetime_remaining() -> None:
    prov = make_provisioner(ttl_expired=100)
    node = make_node("n", pods=[make_pod("a"), make_pod("b")], created=at(0))
    assert disruption_cost(node, prov.provisioner, at(25)) == pytest.approx(1.5)
    assert disruption_cost(node, prov.provisioner, at(500)) == 0.0


def test_order_is_cheapest_disruption_first_then_creation_then_name() -> None:
    nodes = [
        make_node("busy", LARGE, pods=[make_pod("a"), make_pod("b")], created=at(0)),
        make_node("idle-late", pods=[make_pod("c")], created=at(5)),
        make_node("idle-early", pods=[make_pod("d")], created=at(1)),
    ]
    snap = make_inputs(nodes)
    assert [c.name for c in by_disruption_cost(candidates(snap, lambda c: True))] == ["idle-early", "idle-late", "busy"]


def test_a_nodes_disruption_cost_follows_its_view_as_its_pods_change() -> None:
    """The pods' eviction costs are summed once per node view; the node's next view, with a pod
    more or a pod's deletion cost changed, is costed afresh."""
    prov = make_provisioner()
    one = make_node("n", pods=[make_pod("a")])
    assert disruption_cost(one, prov.provisioner, at(0)) == disruption_cost(one, prov.provisioner, at(0)) == 1.0
    two = make_node("n", pods=[make_pod("a"), make_pod("b")])
    assert disruption_cost(two, prov.provisioner, at(0)) == 2.0
    costly = make_node("n", pods=[make_pod("a", annotations={POD_DELETION_COST: str(2**28)}), make_pod("b")])
    assert disruption_cost(costly, prov.provisioner, at(0)) == 4.0
    assert disruption_cost(one, prov.provisioner, at(0)) == 1.0
