"""Repack consolidation (karpy's): nodes replaced by a cheaper set of several nodes, every
consolidation safety rule kept."""

from __future__ import annotations

import dataclasses

import pytest

from controller.core import labels as L
from controller.deprovisioning.consolidation import compute_consolidation, consolidation_candidates, worst_launch_price
from controller.deprovisioning.decide import decide
from controller.deprovisioning.repackconsolidation import REPACK_SIMULATION, RepackConsolidation, prefix_sizes
from controller.deprovisioning.simulation import unplaced_by_provisioning
from controller.deprovisioning.types import Command, DeprovisioningSettings, Inputs
from controller.deprovisioning.validation import validate
from controller.scheduling.scheduler import schedule
from controller.state.snapshot import NodeView
from tests.builders.deprovisioning import (
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
from tests.builders.scheduling import make_pod as sched_pod
from tests.builders.scheduling import term

# No type between medium (4 cpu, $0.20) and huge (16 cpu, $1.00): two 3.5-cpu pods need a huge
# node or two mediums, and Karpenter's consolidators replace with one node at most.
HUGE = instance_type("huge", 16, price=1.00, spot_price=0.30)
TYPES = (SMALL, MEDIUM, HUGE)
ON_DEMAND = [make_provisioner(consolidation=True, capacity_types=["on-demand"], instance_types=TYPES)]
ANY_CAPACITY = [make_provisioner(consolidation=True, instance_types=TYPES)]
NOW = DeprovisioningSettings(validation_wait_seconds=0)


def _half_empty(name: str, created: float = 0, **kw: object) -> NodeView:
    pods = [make_pod(f"{name}-{i}", cpu=3.5) for i in range(2)]
    return make_node(name, HUGE, pods=pods, created=at(created), **kw)  # type: ignore[arg-type]


def _launched(cmd: object) -> list[str]:
    return sorted(r.launch.instance_type.name for r in cmd.replacements if r.launch is not None)  # type: ignore[attr-defined]


def test_a_half_empty_node_is_replaced_by_two_cheaper_nodes() -> None:
    decision = decide(make_inputs([_half_empty("n0")], ON_DEMAND), None, schedule, NOW)
    cmd = decision.execute
    assert cmd is not None and decision.method == "repackconsolidation" and cmd.reason == "consolidation/replace"
    assert cmd.node_names == ("n0",) and _launched(cmd) == ["medium", "medium"]
    assert sorted(p.name for r in cmd.replacements for p in r.pods) == ["n0-0", "n0-1"]


def test_three_half_empty_nodes_consolidate_to_the_cheaper_set() -> None:
    nodes = [_half_empty(f"n{i}", created=i) for i in range(3)]
    cmd = RepackConsolidation().compute(make_inputs(nodes, ON_DEMAND), schedule).command
    assert cmd is not None and cmd.node_names == ("n0", "n1", "n2")
    assert _launched(cmd) == ["medium"] * 6 and cmd.price_after == pytest.approx(1.20)


def test_the_replacements_worst_prices_stay_below_the_candidates_price() -> None:
    nodes = [_half_empty(f"n{i}", created=i) for i in range(3)]
    cmd = RepackConsolidation().compute(make_inputs(nodes, ON_DEMAND), schedule).command
    assert cmd is not None
    worst = sum(max(worst_launch_price(it, r.requirements) for it in r.instance_type_options) for r in cmd.replacements)
    assert worst < 3.00


def test_empty_node_and_multi_node_consolidation_act_before_a_repack() -> None:
    empty = [_half_empty("n0"), make_node("n1", MEDIUM, created=at(1))]
    decision = decide(make_inputs(empty, ON_DEMAND), None, schedule, NOW)
    assert decision.method == "emptynodeconsolidation" and decision.execute is not None
    assert decision.execute.node_names == ("n1",)
    # two mediums whose pods fit on the huge node's free room: multi-node deletes both, no repack
    two = [make_node(f"m{i}", MEDIUM, pods=[make_pod(f"a{i}", cpu=0.5)], created=at(i)) for i in range(2)]
    decision = decide(make_inputs([*two, _half_empty("n0", created=5)], ON_DEMAND), None, schedule, NOW)
    assert decision.method == "multinodeconsolidation" and decision.execute is not None
    assert decision.execute.node_names == ("m0", "m1") and decision.execute.reason == "consolidation/delete"


def test_after_a_scale_down_a_repack_acts_before_single_node_consolidation() -> None:
    # n0's one pod fits on a huge node a third empty: single-node consolidation would delete n0
    # ($0.20/h) and come back for the huge nodes one by one; multi-node cannot take n0 and h1
    # (one huge again); a repack of all three to six mediums and a small saves $0.90/h in one
    # command (bench/halving.py: 22-26 commands became 3-4)
    def third_empty(name: str, created: float) -> NodeView:
        return make_node(name, HUGE, pods=[make_pod(f"{name}-{i}", cpu=3.5) for i in range(3)], created=at(created))

    nodes = [make_node("n0", MEDIUM, pods=[make_pod("a", cpu=1.5)]), third_empty("h1", 1), third_empty("h2", 2)]
    decision = decide(make_inputs(nodes, ON_DEMAND), None, schedule, NOW)
    cmd = decision.execute
    assert cmd is not None and decision.method == "repackconsolidation"
    assert cmd.node_names == ("n0", "h1", "h2") and _launched(cmd) == ["medium"] * 6 + ["small"]
    assert cmd.price_before == pytest.approx(2.20) and cmd.price_after == pytest.approx(1.30)


def test_single_node_consolidation_acts_when_no_repack_saves_enough() -> None:
    barely = instance_type("barely", 4, price=0.202)
    provisioners = [make_provisioner(consolidation=True, capacity_types=["on-demand"], instance_types=(MEDIUM, barely))]
    node = make_node("n0", barely, pods=[make_pod("a", cpu=3)])
    decision = decide(make_inputs([node], provisioners), None, schedule, NOW)
    assert decision.method == "singlenodeconsolidation" and decision.execute is not None
    assert _launched(decision.execute) == ["medium"]  # $0.200 for $0.202: 1 %, below a repack's 2 %


TEN = instance_type("ten", 10, price=0.40)
BIG = instance_type("big", 32, price=2.00)


def _first_fit_cannot_keep_the_plan() -> Inputs:
    """A big node's 4, 4, 3, 3, 3, 3 CPUs: two ten-CPU nodes hold them only as {4, 3, 3} twice, a
    plan the MILP finds and provisioning's greedy packing does not (4 + 4 go together)."""
    provisioners = [
        make_provisioner(consolidation=True, capacity_types=["on-demand"], instance_types=(SMALL, TEN, BIG))
    ]
    node = make_node("n0", BIG, pods=[make_pod(f"p{i}", cpu=c) for i, c in enumerate((4, 4, 3, 3, 3, 3))])
    return make_inputs([node], provisioners)


def _milp_plan(inputs: Inputs) -> Command:
    cands, _ = consolidation_candidates(inputs)
    cmd = compute_consolidation(inputs, cands, schedule, max_new_nodes=24, simulation=REPACK_SIMULATION).command
    assert cmd is not None and _launched(cmd) == ["ten", "ten"]
    return cmd


def test_a_plan_provisioning_would_keep_goes_before_a_tighter_one_it_would_not() -> None:
    # on a cluster provisioning re-places the big node's pods itself: two tens would need a third node
    inputs = _first_fit_cannot_keep_the_plan()
    assert unplaced_by_provisioning(inputs, _milp_plan(inputs), schedule) == 1
    alone = RepackConsolidation().compute(inputs, schedule).command  # no plan it would keep: the tight one
    assert alone is not None and _launched(alone) == ["ten", "ten"]
    # beside it a half-empty huge node h0: prefix 1 deletes h0 (its pods onto n0's free room,
    # $1.00/h) and provisioning would keep that; prefix 2 saves $1.80/h on two mediums and two
    # tens, n0's tight plan: h0's delete goes first
    types = (SMALL, MEDIUM, TEN, BIG, HUGE)
    provisioners = [make_provisioner(consolidation=True, capacity_types=["on-demand"], instance_types=types)]
    big = make_node("n0", BIG, pods=[make_pod(f"p{i}", cpu=c) for i, c in enumerate((4, 4, 3, 3, 3, 3))], created=at(1))
    both = make_inputs([_half_empty("h0"), big], provisioners)
    cmd = RepackConsolidation().compute(both, schedule).command
    assert cmd is not None and cmd.node_names == ("h0",) and unplaced_by_provisioning(both, cmd, schedule) == 0


def test_a_plan_provisioning_would_keep_is_a_repack() -> None:
    inputs = make_inputs([_half_empty("n0")], ON_DEMAND)
    cmd = RepackConsolidation().compute(inputs, schedule).command
    assert cmd is not None and unplaced_by_provisioning(inputs, cmd, schedule) == 0


def test_a_saving_below_the_threshold_is_not_worth_a_repack() -> None:
    barely = dataclasses.replace(HUGE, offerings=tuple(dataclasses.replace(o, price=0.404) for o in HUGE.offerings))
    provisioners = [make_provisioner(consolidation=True, capacity_types=["on-demand"], instance_types=(MEDIUM, barely))]
    node = make_node("n0", barely, pods=[make_pod(f"p{i}", cpu=3.5) for i in range(2)])
    snap = make_inputs([node], provisioners)
    assert RepackConsolidation().compute(snap, schedule).command is None  # $0.40 saves 1 % of $0.404
    assert RepackConsolidation(min_saving=0.005).compute(snap, schedule).command is not None


BLOCKERS = {
    "do-not-consolidate": {"annotations": {L.DO_NOT_CONSOLIDATE: "true"}},
    "do-not-evict pod": {"pods": [make_pod("keep", cpu=3.5, annotations={L.DO_NOT_EVICT: "true"})]},
}


@pytest.mark.parametrize("kw", BLOCKERS.values(), ids=BLOCKERS.keys())
def test_blocked_nodes_are_not_repacked(kw: dict[str, object]) -> None:
    node = make_node("n0", HUGE, **{"pods": [make_pod("a", cpu=3.5), make_pod("b", cpu=3.5)], **kw})  # type: ignore[arg-type]
    assert RepackConsolidation().compute(make_inputs([node], ON_DEMAND), schedule).command is None


def test_a_pdb_allowing_no_disruption_blocks_a_repack() -> None:
    snap = make_inputs([_half_empty("n0")], ON_DEMAND, pdbs=[make_pdb(allowed=0)])
    assert RepackConsolidation().compute(snap, schedule).command is None


def test_spot_nodes_are_never_repacked_onto_spot() -> None:
    node = _half_empty("n0", capacity_type=L.CAPACITY_TYPE_SPOT)
    assert RepackConsolidation().compute(make_inputs([node], ANY_CAPACITY), schedule).command is None


def test_on_demand_repacked_onto_spot_is_pinned_to_spot() -> None:
    cmd = RepackConsolidation().compute(make_inputs([_half_empty("n0")], ANY_CAPACITY), schedule).command
    assert cmd is not None and len(cmd.replacements) >= 1
    for r in cmd.replacements:
        assert r.requirements[L.CAPACITY_TYPE].values == frozenset({"spot"})


def test_the_plan_keeps_required_anti_affinity() -> None:
    # two 1-cpu pods that must not share a node: one medium would hold both, but the plan keeps them apart
    solo = [sched_pod(f"s{i}", cpu="1", labels={"app": "solo"}, owner_kind="ReplicaSet",
                      anti_affinity=[term(L.HOSTNAME, {"app": "solo"})]) for i in range(2)]  # fmt: skip
    pods = [dataclasses.replace(make_pod(p.name), request=p) for p in solo]
    nodes = [make_node(f"n{i}", HUGE, pods=[pods[i]], created=at(i)) for i in range(2)]
    cmd = RepackConsolidation().compute(make_inputs(nodes, ON_DEMAND), schedule).command
    assert cmd is not None and cmd.node_names == ("n0", "n1")
    assert _launched(cmd) == ["small", "small"]
    assert all(len(r.pods) == 1 for r in cmd.replacements)


def test_a_repack_stays_valid_while_nothing_changed() -> None:
    snap = make_inputs([_half_empty(f"n{i}", created=i) for i in range(2)], ON_DEMAND)
    cmd = RepackConsolidation().compute(snap, schedule).command
    assert cmd is not None and len(cmd.replacements) > 1
    checked = validate(cmd, "repackconsolidation", snap, schedule)
    assert checked.command is not None and checked.command.node_names == cmd.node_names


def test_a_repack_is_dropped_when_the_pods_would_need_more() -> None:
    snap = make_inputs([_half_empty(f"n{i}", created=i) for i in range(2)], ON_DEMAND)
    cmd = RepackConsolidation().compute(snap, schedule).command
    assert cmd is not None
    grown = [make_node(f"n{i}", HUGE, pods=[make_pod(f"n{i}-{j}", cpu=3.5) for j in range(3)], created=at(i))
             for i in range(2)]  # fmt: skip
    checked = validate(cmd, "repackconsolidation", make_inputs(grown, ON_DEMAND), schedule)
    assert checked.command is None and "no longer valid" in checked.why_not


SIZES = {"none": (0, 64, []), "one": (1, 64, [1]), "three": (3, 64, [1, 2, 3]), "eight": (8, 64, [1, 2, 4, 8]),
         "capped": (200, 64, [1, 2, 4, 8, 16, 32, 64])}  # fmt: skip


@pytest.mark.parametrize(("n", "limit", "sizes"), SIZES.values(), ids=SIZES.keys())
def test_prefix_sizes_double_up_to_all_candidates(n: int, limit: int, sizes: list[int]) -> None:
    assert prefix_sizes(n, limit) == sizes


@dataclasses.dataclass(frozen=True)
class Spent:
    def spent(self) -> bool:
        return True


def test_a_repack_stopped_on_its_budget_goes_on_at_the_next_prefix_size() -> None:
    full = [make_node(f"n{i}", MEDIUM, pods=[make_pod(f"p{i}", cpu=3)], created=at(i)) for i in range(4)]
    snap = dataclasses.replace(make_inputs(full, ON_DEMAND), budget=Spent())  # nothing to save
    sizes = []
    progress = snap.progress
    for _ in range(4):
        proposal = RepackConsolidation().compute(dataclasses.replace(snap, progress=progress), schedule)
        sizes.append(proposal.covered)
        assert proposal.command is None
        if proposal.progress is None:
            assert proposal.complete
            break
        assert not proposal.complete and proposal.progress.repack_of == ("n0", "n1", "n2", "n3")
        progress = proposal.progress
    assert sizes == [1, 2, 4]  # one size a pass, each after the last, then done
    moved = dataclasses.replace(progress, repack_of=("n0", "n1", "n9"))  # other candidates: from the start
    assert RepackConsolidation().compute(dataclasses.replace(snap, progress=moved), schedule).covered == 1
