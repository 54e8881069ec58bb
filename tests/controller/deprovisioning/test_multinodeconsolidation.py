"""Multi-node consolidation: the binary search for the largest prefix that can go (spec §6.6)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from controller.deprovisioning.multinodeconsolidation import MultiNodeConsolidation
from controller.deprovisioning.types import Progress
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


@dataclass(frozen=True)
class Spent:
    """A budget spent from the start: each pass gets its one simulation."""

    def spent(self) -> bool:
        return True


def test_a_budget_limited_search_continues_where_it_stopped_and_returns_its_best_so_far() -> None:
    """Issue 21: the search covers every candidate (no cap); stopped by its budget it resumes
    next pass from its bounds, and once it has a command it returns that one (anytime)."""
    # 8 mediums with one 1.5-cpu pod each: each node has room for one more, so k nodes can go
    # while k ≤ 8 − k; no type of this catalog takes five such pods
    provisioners = [make_provisioner(consolidation=True, capacity_types=["on-demand"], instance_types=[SMALL, MEDIUM])]
    nodes = [make_node(f"n{i}", MEDIUM, pods=[make_pod(f"p{i}", cpu=1.5)], created=at(i)) for i in range(8)]
    base = make_inputs(nodes, provisioners)
    unlimited = MultiNodeConsolidation().compute(base, schedule)
    assert unlimited.command is not None and len(unlimited.command.candidates) == 4 and unlimited.complete

    first = MultiNodeConsolidation().compute(dataclasses.replace(base, budget=Spent()), schedule)
    assert first.command is None and not first.complete and first.covered == 5  # 5 nodes tried: no
    assert first.progress is not None and first.progress.multi == (1, 3)
    second = MultiNodeConsolidation().compute(
        dataclasses.replace(base, budget=Spent(), progress=first.progress), schedule
    )
    assert second.command is not None and len(second.command.candidates) == 3 and second.complete


def test_a_saved_search_is_not_resumed_over_other_candidates() -> None:
    provisioners = [make_provisioner(consolidation=True, capacity_types=["on-demand"], instance_types=[SMALL, MEDIUM])]
    nodes = [make_node(f"n{i}", MEDIUM, pods=[make_pod(f"p{i}", cpu=1.5)], created=at(i)) for i in range(8)]
    stale = Progress(multi=(1, 1), multi_of=("gone", "n1"))
    inputs = dataclasses.replace(make_inputs(nodes, provisioners), progress=stale)
    out = MultiNodeConsolidation().compute(inputs, schedule)
    assert out.command is not None and len(out.command.candidates) == 4
