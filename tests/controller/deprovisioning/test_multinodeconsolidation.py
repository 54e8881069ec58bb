"""Multi-node consolidation: the binary search for the largest prefix that can go (spec §6.6)."""

from __future__ import annotations

from controller.deprovisioning.multinodeconsolidation import MultiNodeConsolidation
from controller.scheduling.scheduler import schedule
from tests.builders.deprovisioning import (
    LARGE,
    MEDIUM,
    SMALL,
    at,
    instance_type,
    make_inputs,
    make_node,
    make_pdb,
    make_pod,
    make_provisioner,
)

ON_DEMAND = [make_provisioner(consolidation=True, capacity_types=["on-demand"])]


def test_multi_node_finds_the_largest_prefix_that_can_go() -> None:
    # Four half-used medium nodes: three can move onto the fourth; all four would need a new
    # medium node, which is the same type at the same price and so refused.
    nodes = [make_node(f"n{i}", MEDIUM, pods=[make_pod(f"p{i}")], created=at(i)) for i in range(4)]
    out = MultiNodeConsolidation().compute(make_inputs(nodes, ON_DEMAND), schedule)
    assert out.command is not None and out.command.reason == "consolidation/delete"
    assert out.command.node_names == ("n0", "n1", "n2")


def test_multi_node_replaces_several_nodes_with_one_cheaper_node() -> None:
    # 3 mediums ($0.20 each) with 2.5 cpu each: one 8-cpu xl ($0.30) is the real scheduler's
    # cheapest packing for any prefix of 2 or 3 of them, so the binary search takes all three
    xl = instance_type("xl", 8, price=0.30)
    types = [SMALL, MEDIUM, xl]
    provisioners = [make_provisioner(consolidation=True, capacity_types=["on-demand"], instance_types=types)]
    nodes = [make_node(f"n{i}", MEDIUM, pods=[make_pod(f"p{i}", cpu=2.5)], created=at(i)) for i in range(3)]
    out = MultiNodeConsolidation().compute(make_inputs(nodes, provisioners), schedule)
    assert out.command is not None and out.command.reason == "consolidation/replace"
    assert out.command.node_names == ("n0", "n1", "n2")
    assert [it.name for it in out.command.replacements[0].instance_type_options] == ["xl"]


def test_multi_node_needs_two_candidates() -> None:
    nodes = [make_node("n0", LARGE, pods=[make_pod("a")])]
    assert MultiNodeConsolidation().compute(make_inputs(nodes, ON_DEMAND), schedule).command is None


def test_multi_node_skips_blocked_nodes() -> None:
    nodes = [
        make_node(f"n{i}", MEDIUM, pods=[make_pod(f"p{i}", labels={"app": f"a{i}"})], created=at(i)) for i in range(3)
    ]
    snap = make_inputs(nodes, ON_DEMAND, pdbs=[make_pdb(allowed=0, app="a0")])
    out = MultiNodeConsolidation().compute(snap, schedule)
    assert out.command is not None and "n0" not in out.command.node_names
    assert any(e.node == "n0" and e.reason == "DeprovisioningBlocked" for e in out.events)
