"""Empty-node, multi-node (binary search) and single-node consolidation (spec §6.6)."""

from __future__ import annotations

from controller.core import labels as L
from controller.deprovisioning.consolidators import (
    EmptyNodeConsolidation,
    MultiNodeConsolidation,
    SingleNodeConsolidation,
)
from controller.scheduling.scheduler import schedule
from tests.builders.deprovisioning import (
    LARGE,
    MEDIUM,
    SMALL,
    at,
    instance_type,
    make_node,
    make_pdb,
    make_pod,
    make_provisioner,
    make_snapshot,
)

ON_DEMAND = [make_provisioner(consolidation=True, capacity_types=["on-demand"])]


def test_empty_nodes_are_deleted_together() -> None:
    nodes = [
        make_node("e1"),
        make_node("e2", pods=[make_pod("ds", owner_kind="DaemonSet")]),
        make_node("busy", pods=[make_pod("a")]),
    ]
    out = EmptyNodeConsolidation().compute(make_snapshot(nodes, ON_DEMAND), schedule)
    assert out.command is not None and out.command.reason == "consolidation/delete"
    assert out.command.node_names == ("e1", "e2")


def test_empty_node_with_do_not_consolidate_stays() -> None:
    nodes = [make_node("e1", annotations={L.DO_NOT_CONSOLIDATE: "true"})]
    assert EmptyNodeConsolidation().compute(make_snapshot(nodes, ON_DEMAND), schedule).command is None


def test_multi_node_finds_the_largest_prefix_that_can_go() -> None:
    # Four half-used medium nodes: three can move onto the fourth; all four would need a new
    # medium node, which is the same type at the same price and so refused.
    nodes = [make_node(f"n{i}", MEDIUM, pods=[make_pod(f"p{i}")], created=at(i)) for i in range(4)]
    out = MultiNodeConsolidation().compute(make_snapshot(nodes, ON_DEMAND), schedule)
    assert out.command is not None and out.command.reason == "consolidation/delete"
    assert out.command.node_names == ("n0", "n1", "n2")


def test_multi_node_replaces_several_nodes_with_one_cheaper_node() -> None:
    # 3 mediums ($0.20 each) with 2.5 cpu each: one 8-cpu xl ($0.30) is the real scheduler's
    # cheapest packing for any prefix of 2 or 3 of them, so the binary search takes all three
    xl = instance_type("xl", 8, price=0.30)
    types = [SMALL, MEDIUM, xl]
    provisioners = [make_provisioner(consolidation=True, capacity_types=["on-demand"], instance_types=types)]
    nodes = [make_node(f"n{i}", MEDIUM, pods=[make_pod(f"p{i}", cpu=2.5)], created=at(i)) for i in range(3)]
    out = MultiNodeConsolidation().compute(make_snapshot(nodes, provisioners), schedule)
    assert out.command is not None and out.command.reason == "consolidation/replace"
    assert out.command.node_names == ("n0", "n1", "n2")
    assert [it.name for it in out.command.replacements[0].instance_type_options] == ["xl"]


def test_multi_node_needs_two_candidates() -> None:
    nodes = [make_node("n0", LARGE, pods=[make_pod("a")])]
    assert MultiNodeConsolidation().compute(make_snapshot(nodes, ON_DEMAND), schedule).command is None


def test_multi_node_skips_blocked_nodes() -> None:
    nodes = [
        make_node(f"n{i}", MEDIUM, pods=[make_pod(f"p{i}", labels={"app": f"a{i}"})], created=at(i)) for i in range(3)
    ]
    snap = make_snapshot(nodes, ON_DEMAND, pdbs=[make_pdb(allowed=0, app="a0")])
    out = MultiNodeConsolidation().compute(snap, schedule)
    assert out.command is not None and "n0" not in out.command.node_names
    assert any(e.node == "n0" and e.reason == "DeprovisioningBlocked" for e in out.events)


def test_single_node_takes_the_cheapest_disruption_first() -> None:
    nodes = [
        make_node("two-pods", MEDIUM, pods=[make_pod("a"), make_pod("b")], created=at(0)),
        make_node("one-pod", MEDIUM, pods=[make_pod("c")], created=at(1)),
    ]
    out = SingleNodeConsolidation().compute(make_snapshot(nodes, ON_DEMAND), schedule)
    assert out.command is not None and out.command.node_names == ("one-pod",)


def test_single_node_reports_why_a_node_stays() -> None:
    nodes = [make_node("n1", MEDIUM, pods=[make_pod("a", cpu=3)])]
    out = SingleNodeConsolidation().compute(make_snapshot(nodes, ON_DEMAND), schedule)
    assert out.command is None
    assert [(e.node, e.reason, e.message) for e in out.events] == [
        ("n1", "Unconsolidatable", "can't replace with a cheaper node")
    ]


def test_do_not_evict_pod_keeps_its_node_from_consolidation() -> None:
    nodes = [make_node("n1", LARGE, pods=[make_pod("a", annotations={L.DO_NOT_EVICT: "true"})])]
    out = SingleNodeConsolidation().compute(make_snapshot(nodes, ON_DEMAND), schedule)
    assert out.command is None and [e.reason for e in out.events] == ["DeprovisioningBlocked"]


def test_nothing_while_the_cluster_is_consolidated() -> None:
    nodes = [make_node("e1"), make_node("n1", LARGE, pods=[make_pod("a")]), make_node("n2", LARGE)]
    snap = make_snapshot(nodes, ON_DEMAND, consolidated=True)
    for strategy in (EmptyNodeConsolidation(), MultiNodeConsolidation(), SingleNodeConsolidation()):
        assert strategy.compute(snap, schedule).command is None
