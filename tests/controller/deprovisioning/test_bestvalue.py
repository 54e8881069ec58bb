"""Consolidation by value: disruption, value, single-node's sweep by value, the offers (issue 21)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from controller.core import labels as L
from controller.deprovisioning.bestvalue import SingleNodeByValue, best, disruption, offers, value
from controller.deprovisioning.candidates import new_candidate
from controller.deprovisioning.consolidation import compute_consolidation, consolidation_candidates
from controller.deprovisioning.types import Command, Proposal
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import SchedulingInput, SchedulingResult
from controller.state.snapshot import NodeView
from tests.builders.deprovisioning import (
    CATALOG,
    HALF_COST,
    LARGE,
    MEDIUM,
    SMALL,
    ZONAL_LARGE,
    ZONAL_SMALL,
    ZONE_A,
    ZONE_B,
    at,
    cheap_prefix_and_dear_node,
    in_zone,
    kube_scheduler_spill,
    make_inputs,
    make_node,
    make_pod,
    make_provisioner,
)
from tests.builders.scheduling import make_instance_type

ON_DEMAND = [make_provisioner(consolidation=True, capacity_types=["on-demand"])]
NEGATIVE = {L.POD_DELETION_COST: str(-(2**30))}  # eviction cost -7
HIGH = {L.POD_DELETION_COST: str(2**31 - 1)}  # eviction cost 17, clamped to 10


def test_disruption_is_one_per_node_plus_the_positive_eviction_costs_of_its_pods() -> None:
    pods = [make_pod("a"), make_pod("b", annotations=HALF_COST), make_pod("c", annotations=NEGATIVE)]
    pods.append(make_pod("d", annotations=HIGH))
    nodes = [make_node("busy", LARGE, pods=pods), make_node("empty", SMALL)]
    inputs = make_inputs(nodes, ON_DEMAND)
    cands = [c for n in nodes if (c := new_candidate(n, inputs)) is not None]
    assert [round(disruption([c]), 6) for c in cands] == [1 + 1 + 0.5 + 0 + 10, 1]
    assert round(disruption(cands), 6) == 13.5


def test_value_is_the_saving_per_unit_of_disruption() -> None:
    inputs = make_inputs([make_node("n", LARGE, pods=[make_pod("a"), make_pod("b")])], ON_DEMAND)
    cand = new_candidate(inputs.nodes[0], inputs)
    assert cand is not None
    assert value(Command("consolidation", (cand,))) == 0.40 / 3  # a delete saves its price; 1 + 2 pods


def test_value_is_net_of_the_nodes_the_command_s_spilled_pods_need() -> None:
    # the delete of "c" saves its $0.40/h, but kube-scheduler leaves pod "k" to a new $0.10/h node
    inputs = kube_scheduler_spill(ZONAL_LARGE)
    cmd = compute_consolidation(inputs, [c for c in consolidation_candidates(inputs)[0] if c.name == "c"], schedule)
    assert cmd.command is not None and not cmd.command.replacements
    assert value(cmd.command) == pytest.approx((0.40 - 0.10) / 3)


def test_best_ranks_a_command_by_what_it_saves_with_its_spilled_pods_nodes() -> None:
    # the large delete saves $0.40/h for 3 of disruption (0.13), but its spilled pods need $0.20/h
    # of new nodes (0.07); the medium's $0.20/h for 2 (0.10) is worth more
    inputs = make_inputs(
        [make_node("l", LARGE, pods=[make_pod("a"), make_pod("b")]), make_node("m", MEDIUM, pods=[make_pod("c")])],
        ON_DEMAND,
    )
    large, medium = (new_candidate(n, inputs) for n in inputs.nodes)
    assert large is not None and medium is not None
    spilling, plain = Command("consolidation", (large,), spill=0.20), Command("consolidation", (medium,))
    single = SingleNodeByValue()
    chosen = best([(single, Proposal(spilling)), (single, Proposal(plain))])
    assert chosen is not None and chosen[1] is plain


ZONAL_MID = make_instance_type(
    "zonal-mid", cpu=8, memory_gib=4, pods=110, price=0.35, zones=(ZONE_A, ZONE_B),
    labels={L.INSTANCE_CATEGORY: "m", L.INSTANCE_FAMILY: "m5"},
)  # fmt: skip


def test_the_sweep_takes_a_replacement_over_a_delete_its_spilled_pods_leave_worth_less() -> None:
    # "c" (kube_scheduler_spill's candidate at $0.35/h) is deleted by the plan: 0.35 / 3 = 0.117,
    # but kube-scheduler leaves "k" to a new $0.10/h node: 0.25 / 3 = 0.083; "r" (zone-a, its
    # 2.5-cpu pod fits on no node there) is replaced by a medium: 0.20 / 2 = 0.10 ("a"'s 6-cpu pod
    # is kept to zone-a, where "r" has no room for it: "a" stays)
    a, b, c = kube_scheduler_spill(ZONAL_MID).nodes
    kept = dataclasses.replace(a, pods=tuple(in_zone(p, ZONE_A) for p in a.pods))
    nodes = [kept, b, c, make_node("r", LARGE, pods=[in_zone(make_pod("z", cpu=2.5), ZONE_A)], created=at(3))]
    prov = make_provisioner(
        consolidation=True, capacity_types=["on-demand"], instance_types=(*CATALOG, ZONAL_SMALL, ZONAL_MID)
    )
    out = SingleNodeByValue().compute(make_inputs(nodes, [prov]), schedule)
    assert out.command is not None and out.command.node_names == ("r",) and out.command.replacements
    assert value(out.command) == pytest.approx(0.10)


def test_single_node_by_value_takes_the_dear_node_before_the_cheapest_to_disrupt() -> None:
    # both go by deletion (each pod fits on the other node); Karpenter's order takes the older,
    # equal in disruption — the small one, saving $0.10/h; by value the large one saves $0.40/h
    nodes = [
        make_node("small", SMALL, pods=[make_pod("a")], created=at(0)),
        make_node("large", LARGE, pods=[make_pod("b")], created=at(1)),
    ]
    out = SingleNodeByValue().compute(make_inputs(nodes, ON_DEMAND), schedule)
    assert out.command is not None and out.command.node_names == ("large",) and not out.command.replacements


@dataclass
class Counting:
    """The real scheduler, counting the candidates' simulations (not the kube-scheduler placement
    check of a command found, `simulation.spill`)."""

    calls: int = 0

    def __call__(self, inp: SchedulingInput) -> SchedulingResult:
        self.calls += not inp.settings.least_allocated
        return schedule(inp)


def test_the_sweep_stops_once_no_candidate_left_could_beat_the_best() -> None:
    # the large node's delete is worth 0.40 / 2; the mediums' 0.20 / 3 at most, less than half of it
    nodes = [make_node("large", LARGE, pods=[make_pod("b")], created=at(9))]
    nodes += [make_node(f"m{i}", MEDIUM, pods=[make_pod(f"p{i}"), make_pod(f"q{i}")], created=at(i)) for i in range(4)]
    scheduler = Counting()
    out = SingleNodeByValue().compute(make_inputs(nodes, ON_DEMAND), scheduler)
    assert out.command is not None and out.command.node_names == ("large",)
    assert scheduler.calls == 1 and out.covered == 1 and out.complete


def test_the_sweep_offers_nothing_worth_no_more_than_its_floor() -> None:
    nodes = [make_node("large", LARGE, pods=[make_pod("b")]), make_node("m", MEDIUM, pods=[make_pod("c")])]
    scheduler = Counting()
    out = SingleNodeByValue(floor=0.2).compute(make_inputs(nodes, ON_DEMAND), scheduler)
    assert out.command is None and out.complete and scheduler.calls == 0


@dataclass(frozen=True)
class Spent:
    """A budget spent from the start: each method gets its one simulation."""

    def spent(self) -> bool:
        return True


def pinned(name: str, node: str) -> NodeView:
    """A medium node whose one pod is pinned to its host: room elsewhere, but it may not move."""
    pod = make_pod(name)
    assert pod.request is not None
    request = dataclasses.replace(pod.request, node_selector={L.HOSTNAME: node})
    return make_node(node, MEDIUM, pods=[dataclasses.replace(pod, request=request)])


def test_a_sweep_stopped_by_the_budget_continues_where_it_stopped() -> None:
    nodes = [pinned(f"p{i}", f"n{i}") for i in range(3)]
    inputs = dataclasses.replace(make_inputs(nodes, ON_DEMAND), budget=Spent())
    out = SingleNodeByValue().compute(inputs, schedule)
    assert out.command is None and not out.complete and out.progress is not None
    seen = [out.progress.single_after]
    while not out.complete:
        assert out.progress is not None
        out = SingleNodeByValue().compute(dataclasses.replace(inputs, progress=out.progress), schedule)
        seen += [e.node for e in out.events]
    assert sorted(seen) == ["n0", "n1", "n2"]


def test_offers_holds_every_method_s_command_and_the_best_is_the_dear_delete() -> None:
    found = offers(cheap_prefix_and_dear_node(), schedule)
    assert [d.method for d, _ in found] == ["multinodeconsolidation", "singlenodeconsolidation"]
    multi, single = (p.command for _, p in found)
    assert multi is not None and multi.node_names == ("cheap0", "cheap1", "cheap2") and multi.replacements
    assert single is not None and single.node_names == ("dear",) and not single.replacements
    chosen = best(found)
    assert chosen is not None and chosen[0].method == "singlenodeconsolidation"
    assert value(single) == 0.2 > value(multi)


def test_repack_is_asked_only_when_no_other_method_offers_a_command() -> None:
    assert "repackconsolidation" not in [d.method for d, _ in offers(cheap_prefix_and_dear_node(), schedule)]
    # one large node (no multi-node: one candidate) whose 6 cpu no cheaper type holds (no single-node)
    nodes = [make_node("big", LARGE, pods=[make_pod("a", cpu=3), make_pod("b", cpu=3)])]
    found = offers(make_inputs(nodes, ON_DEMAND), schedule)
    assert [d.method for d, _ in found] == ["multinodeconsolidation", "singlenodeconsolidation", "repackconsolidation"]


def test_best_is_none_without_a_command_and_the_first_asked_on_a_tie() -> None:
    assert best([]) is None
    inputs = make_inputs([make_node("n", LARGE, pods=[make_pod("a")])], ON_DEMAND)
    cand = new_candidate(inputs.nodes[0], inputs)
    assert cand is not None
    a, b = SingleNodeByValue(), SingleNodeByValue(floor=1.0)
    cmd = Command("consolidation", (cand,))
    chosen = best([(a, Proposal()), (a, Proposal(cmd)), (b, Proposal(cmd))])
    assert chosen is not None and chosen[0] is a


def test_nothing_is_offered_while_the_cluster_is_consolidated() -> None:
    nodes = [make_node("large", LARGE, pods=[make_pod("b")]), make_node("m", MEDIUM, pods=[make_pod("c")])]
    inputs = make_inputs(nodes, ON_DEMAND, consolidated=True)
    assert all(p.command is None and p.complete for _, p in offers(inputs, schedule))


def test_the_best_deletes_go_together_as_one_multi_node_command() -> None:
    # three large nodes holding one 1-cpu pod each ($0.40/h for 2 each); a medium holding two
    # ($0.20/h for 3: worth less than half of a large, left for a later pass); room on "full"
    nodes = [make_node(f"l{i}", LARGE, pods=[make_pod(f"a{i}")], created=at(i)) for i in range(3)]
    nodes.append(make_node("m", MEDIUM, pods=[make_pod("b"), make_pod("c")], created=at(5)))
    nodes.append(make_node("full", LARGE, pods=[make_pod("d", cpu=4, annotations=HIGH)], created=at(6)))
    found = offers(make_inputs(nodes, ON_DEMAND), schedule)
    chosen = best(found)
    assert chosen is not None
    deprovisioner, cmd = chosen
    assert deprovisioner.method == "multinodeconsolidation" and not cmd.replacements
    assert cmd.node_names == ("l0", "l1", "l2") and value(cmd) == pytest.approx(1.2 / 6)


def test_a_delete_that_cannot_go_with_the_batch_is_left_for_a_later_pass() -> None:
    # each large's 3-cpu pod fits on "spare" (4 cpu free) alone, not both together
    nodes = [make_node(f"l{i}", LARGE, pods=[make_pod(f"a{i}", cpu=3)], created=at(i)) for i in range(2)]
    nodes.append(make_node("spare", LARGE, pods=[make_pod("d", cpu=4, annotations=HIGH)], created=at(5)))
    out = SingleNodeByValue().compute(make_inputs(nodes, ON_DEMAND), schedule)
    assert out.command is not None and out.command.node_names == ("l0",) and not out.command.replacements


def test_a_sweep_out_of_budget_returns_its_best_so_far() -> None:
    nodes = [make_node(f"l{i}", LARGE, pods=[make_pod(f"a{i}")], created=at(i)) for i in range(3)]
    nodes.append(make_node("full", LARGE, pods=[make_pod("d", cpu=4, annotations=HIGH)], created=at(6)))
    inputs = dataclasses.replace(make_inputs(nodes, ON_DEMAND), budget=Spent())
    out = SingleNodeByValue().compute(inputs, schedule)
    assert out.command is not None and out.command.node_names == ("l0",) and out.complete and out.covered == 1
