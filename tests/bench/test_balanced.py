"""bench/balanced.py's parts: Karpenter's balanced-consolidation workload, the script's moves and
rankings, the curves, and karpy's consolidation on a small cluster of it."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from bench.balanced import (
    STRATEGIES,
    TYPES,
    Move,
    Node,
    Pod,
    at,
    build_cluster,
    catalog,
    churn,
    consolidate,
    counted,
    deletion_cost,
    executed,
    karpy_curve,
    lowest_margin,
    margins,
    moves,
    pod_object,
    pod_size,
    rounds,
    shortfalls,
)
from controller.deprovisioning.candidates import eviction_cost
from controller.state.views import pod_view


def node(type_name: str, *pods: tuple[float, float, float]) -> Node:
    name, cpu, mem, price = next(t for t in TYPES if t[0] == type_name)
    return Node(name, cpu, mem, price, [Pod(*p) for p in pods])


def rounded(curve: list[tuple[float, float]]) -> list[tuple[float, float]]:
    return [(pods, round(saved, 6)) for pods, saved in curve]


def test_pod_sizes_are_rounded_and_clipped_as_the_script_does() -> None:
    assert pod_size(0.01, 0.2) == (0.25, 1.0)
    assert pod_size(1.3, 4.6) == (1.5, 5.0)
    assert pod_size(40.0, 500.0) == (16.0, 120.0)


def test_the_seeded_cluster_is_the_scripts() -> None:
    # Karpenter's script prints "2339 nodes, 5000 pods" and "$509.61/hr" for seed 42
    nodes = build_cluster(np.random.default_rng(42), 5000)
    assert len(nodes) == 2339
    assert sum(len(n.pods) for n in nodes) == 5000
    assert sum(n.price for n in nodes) == pytest.approx(509.6107, abs=1e-4)


def test_the_workloads_distributions() -> None:
    nodes = build_cluster(np.random.default_rng(7), 3000)
    pods = [p for n in nodes for p in n.pods]
    cpus, mems, costs = [p.cpu for p in pods], [p.mem for p in pods], [p.cost for p in pods]
    assert statistics.median(cpus) == 1.0  # log-normal(0, 1): median e^0
    assert 4 <= statistics.median(mems) <= 5  # log-normal(1.5, 1.2): median e^1.5 ≈ 4.5 GiB
    assert all(c == 0.25 or (c * 2).is_integer() for c in cpus) and min(cpus) >= 0.25 and max(cpus) <= 16
    assert all(m.is_integer() for m in mems) and min(mems) >= 1 and max(mems) <= 120
    assert set(costs) == {0.0, 1.0, 10.0}
    assert costs.count(10.0) / len(costs) == pytest.approx(1 / 7, abs=0.03)
    assert costs.count(1.0) / len(costs) == pytest.approx(5 / 7, abs=0.03)
    for n in nodes:  # first fit: every node holds its pods, and is the cheapest type for its largest
        assert n.cpu_free >= 0 and n.mem_free >= 0


def test_churn_keeps_pods_within_room_and_drops_nothing_it_should_keep() -> None:
    rng = np.random.default_rng(3)
    nodes = build_cluster(rng, 400)
    before = {id(n): len(n.pods) for n in nodes}
    after = churn(rng, nodes)
    assert after and all(n.pods for n in after)
    for n in after:
        assert n.cpu_free >= 0 and n.mem_free >= 0
        if before[id(n)] <= 1:
            assert len(n.pods) >= before[id(n)]  # a single pod is never killed
        assert len(n.pods) <= before[id(n)] + 3
    assert sum(1 for _ in rounds(3, 300)) == 3


def test_moves_replace_and_delete_as_the_script_judges_them() -> None:
    nodes = [
        node("m7i.2xlarge", (1.0, 2.0, 1.0)),  # fits a c7i.large: REPLACE saves 0.4032 - 0.0893
        node("c7i.xlarge", (0.5, 1.0, 0.0), (0.5, 1.0, 10.0)),  # fits a c7i.large too; its pods fit on the m7i
        node("c7i.2xlarge", (8.0, 16.0, 1.0)),  # full, and fits nowhere else
    ]
    ms = moves(nodes)
    replace = [m for m in ms if not m.delete]
    delete = [m for m in ms if m.delete]
    assert [(m.node, round(m.savings, 4)) for m in replace] == [(0, 0.3139), (1, 0.0892)]  # both fit a c7i.large
    assert {m.node for m in delete} == {0, 1}  # the m7i's one pod fits on the c7i.xlarge too
    pool_cost, pool_disruption = 0.4032 + 0.1785 + 0.3570, 2 + 11 + 2
    d1 = next(m for m in delete if m.node == 1)
    assert d1.disruption == 11 and d1.pods == 2  # 1 for the node, 0 and 10 for its pods
    assert d1.score == pytest.approx((0.1785 / pool_cost) / (11 / pool_disruption))


def test_rankings_order_as_named() -> None:
    ms = [Move(0, True, 1.0, 4.0, 3, 0.5), Move(1, False, 0.5, 1.0, 1, 2.0), Move(2, True, 2.0, 8.0, 7, 0.25)]
    assert STRATEGIES["score"](ms) == [1, 0, 2]
    assert STRATEGIES["savings"](ms) == [2, 0, 1]
    assert STRATEGIES["disruption"](ms) == [1, 0, 2]
    assert sorted(STRATEGIES["random"](ms)) == [0, 1, 2]


def test_counted_adds_every_move_but_executed_only_what_still_holds() -> None:
    # two single-pod nodes each fitting in the one free slot of the third: both DELETEs count,
    # only the first can happen
    nodes = [node("c7i.large", (1.0, 2.0, 1.0)), node("c7i.large", (1.0, 2.0, 1.0)),
             node("c7i.large", (1.0, 2.0, 1.0))]  # fmt: skip
    ms = [m for m in moves(nodes) if m.delete]
    order = list(range(len(ms)))
    assert rounded(counted(ms, order)) == [(0.0, 0.0), (1.0, 0.0893), (2.0, 0.1786), (3.0, 0.2679)]
    assert rounded(executed(nodes, ms, order)) == [(0.0, 0.0), (1.0, 0.0893)]
    assert [len(n.pods) for n in nodes] == [1, 1, 1]  # the round's nodes are not changed


def test_executed_replace_is_repriced_for_the_pods_the_node_holds_then() -> None:
    nodes = [node("c7i.large", (0.5, 1.0, 1.0)), node("m7i.xlarge", (1.0, 2.0, 1.0))]
    ms = [Move(0, True, 0.0893, 2.0, 1, 1.0), Move(1, False, 0.2016 - 0.0893, 2.0, 1, 1.0)]
    curve = executed(nodes, ms, [0, 1])  # the delete lands a pod on the m7i, then it replaces to 1.5 vCPU
    assert rounded(curve) == [(0.0, 0.0), (1.0, 0.0893), (3.0, 0.2016)]  # a c7i.large still holds 1.5 vCPU, 3 GiB


def test_interpolation_and_the_lowest_margin() -> None:
    ref = [(0.0, 0.0), (10.0, 5.0), (20.0, 6.0)]
    assert at(ref, 5.0) == 2.5
    assert at(ref, 15.0) == 5.5
    assert at(ref, 40.0) == 6.0  # past its last move a curve saves no more
    above = [(0.0, 0.0), (4.0, 3.0), (10.0, 5.5), (20.0, 7.0)]
    assert lowest_margin(above, [ref]) == (0.0, 0.0)  # equal only at the origin
    below = [(0.0, 0.0), (20.0, 6.5)]  # at or above at its one command, under the reference at 10 pods
    assert margins(below, {"ref": ref}) == [(20.0, 6.5, "ref", 6.0)]
    assert lowest_margin(below, [ref]) == (-1.75, 10.0)
    assert shortfalls(above, [ref]) == []
    assert shortfalls(below, [ref]) == [(10.0, 10.0, -1.75, 10.0)]
    dips = [(0.0, 0.0), (4.0, 1.0), (10.0, 5.0), (14.0, 5.0), (20.0, 5.5)]  # under at 4, at 10, under from 14
    assert shortfalls(dips, [ref]) == [(4.0, 4.0, -1.0, 4.0), (14.0, 20.0, -0.5, 20.0)]
    assert margins([(0.0, 0.0), (5.0, 1.0)], {"a": ref, "b": [(0.0, 0.0), (5.0, 4.0)]}) == [(5.0, 1.0, "b", 4.0)]
    assert karpy_curve([]) == [(0.0, 0.0)]


def test_a_pods_disruption_cost_reaches_karpy_as_its_deletion_cost() -> None:
    for cost in (0.0, 1.0, 10.0):
        view = pod_view(pod_object(1, Pod(0.5, 2.0, cost), "node-00000"))
        assert eviction_cost(view) == cost
    assert deletion_cost(0.0) == str(-(2**27))


def test_the_catalog_is_the_scripts_types_at_its_prices() -> None:
    types = {it.name: it for it in catalog()}
    assert len(types) == 26
    it = types["r7i.2xlarge"]
    assert it.allocatable["cpu"] == 8000 and it.allocatable["memory"] == 64 * 2**30
    assert [(o.capacity_type, o.price) for o in it.offerings] == [("on-demand", 0.5292)]


def test_karpy_consolidates_a_small_cluster_and_reports_each_command() -> None:
    nodes = [
        node("m7i.2xlarge", (1.0, 2.0, 1.0)),
        node("c7i.xlarge", (0.5, 1.0, 1.0)),
        node("r7i.xlarge", (1.0, 20.0, 1.0), (0.5, 1.0, 0.0)),
    ]
    steps = consolidate(nodes)
    assert steps, "an over-sized fleet consolidates"
    curve = karpy_curve(steps)
    total = sum(n.price for n in nodes)
    assert 0 < curve[-1][1] < total
    assert all(s.pods > 0 or s.action == "delete" for s in steps)
    assert curve[-1][0] == sum(s.pods for s in steps)
