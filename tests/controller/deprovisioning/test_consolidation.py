"""Consolidation's core decision: delete, replace with one cheaper node, or nothing (spec §6.6)."""

from __future__ import annotations

import dataclasses

import pytest

from controller.core import labels as L
from controller.core.requirements import Requirements
from controller.core.taints import Taint
from controller.deprovisioning.candidates import candidates
from controller.deprovisioning.consolidation import (
    compute_consolidation,
    consolidation_blocker,
    consolidation_candidates,
    filter_out_same_type,
    worst_launch_price,
)
from controller.deprovisioning.emptynodeconsolidation import EmptyNodeConsolidation
from controller.deprovisioning.multinodeconsolidation import MultiNodeConsolidation
from controller.deprovisioning.simulation import Spill
from controller.deprovisioning.singlenodeconsolidation import SingleNodeConsolidation
from controller.deprovisioning.types import CONSOLIDATION, SETTLE_SECONDS, Command, Displacement, Inputs
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import SchedulingInput, SchedulingResult
from tests.builders.deprovisioning import (
    LARGE,
    MEDIUM,
    SMALL,
    ZONAL_LARGE,
    ZONAL_SMALL,
    at,
    instance_type,
    kube_scheduler_spill,
    make_inputs,
    make_node,
    make_pod,
    make_provisioner,
)
from tests.builders.scheduling import make_instance_type

ON_DEMAND = [make_provisioner(consolidation=True, capacity_types=["on-demand"])]
ANY_CAPACITY = [make_provisioner(consolidation=True)]


def _compute(snap: Inputs, *names: str, scheduler=schedule):  # type: ignore[no-untyped-def]
    by_name = {c.name: c for c in candidates(snap, lambda c: True)}
    return compute_consolidation(snap, [by_name[n] for n in names], scheduler)


def test_a_node_whose_pods_fit_elsewhere_is_deleted() -> None:
    snap = make_inputs([make_node("n1", pods=[make_pod("a")]), make_node("n2", pods=[make_pod("b")])], ON_DEMAND)
    result = _compute(snap, "n1")
    assert result.command is not None and result.command.reason == "consolidation/delete"
    assert result.command.node_names == ("n1",)


def test_a_node_is_replaced_by_a_cheaper_one() -> None:
    snap = make_inputs([make_node("big", LARGE, pods=[make_pod("a", cpu=1.5)])], ON_DEMAND)
    cmd = _compute(snap, "big").command
    assert cmd is not None and cmd.reason == "consolidation/replace"
    (new,) = cmd.replacements
    assert [it.name for it in new.instance_type_options] == ["small", "medium"]
    assert new.launch is not None and new.launch.instance_type.name == "small"


def test_a_delete_costed_with_the_node_kube_schedulers_placement_needs_is_still_taken() -> None:
    # the plan deletes the $0.40/h node; kube-scheduler's placement needs a $0.10/h one for "k"
    result = _compute(kube_scheduler_spill(ZONAL_LARGE), "c")
    assert result.command is not None and result.command.reason == "consolidation/delete"
    assert result.spill == Spill(1, 0.10)


def test_a_command_that_only_works_with_its_own_placement_is_not_taken() -> None:
    # the same for a $0.10/h node: the node "k" would need costs as much as the delete saves, so
    # taking it would only move the node (a later pass would consolidate that one again)
    result = _compute(kube_scheduler_spill(ZONAL_SMALL), "c")
    assert result.command is None and result.why_not.startswith("kube-scheduler would find no room for 1 of its pods")


def test_no_replacement_that_is_not_strictly_cheaper() -> None:
    snap = make_inputs([make_node("n1", SMALL, pods=[make_pod("a", cpu=1.5)])], ON_DEMAND)
    assert _compute(snap, "n1").why_not == "can't replace with a cheaper node"


def test_never_spot_to_spot() -> None:
    snap = make_inputs([make_node("n1", LARGE, capacity_type="spot", pods=[make_pod("a")])], ANY_CAPACITY)
    assert _compute(snap, "n1").why_not == "can't replace a spot node with a spot node"


def test_spot_node_can_still_be_consolidated_by_deletion() -> None:
    nodes = [make_node("n1", LARGE, capacity_type="spot", pods=[make_pod("a")]), make_node("n2", pods=[])]
    cmd = _compute(make_inputs(nodes, ANY_CAPACITY), "n1").command
    assert cmd is not None and cmd.reason == "consolidation/delete"


def test_on_demand_to_spot_is_allowed_and_pinned_to_spot() -> None:
    snap = make_inputs([make_node("n1", LARGE, pods=[make_pod("a")])], ANY_CAPACITY)
    cmd = _compute(snap, "n1").command
    assert cmd is not None and cmd.reason == "consolidation/replace"
    (new,) = cmd.replacements
    assert new.requirements[L.CAPACITY_TYPE].values == frozenset({"spot"})
    assert new.launch is not None and new.launch.capacity_type == "spot"


def test_pods_that_cannot_be_rescheduled_block_consolidation() -> None:
    def pinned(inp: SchedulingInput) -> SchedulingResult:
        result = schedule(inp)
        stuck = {p.key: "needs its node" for p in inp.pods if p.labels.get("app") == "pinned"}
        return dataclasses.replace(result, unschedulable={**result.unschedulable, **stuck})

    nodes = [make_node("n1", pods=[make_pod("a", labels={"app": "pinned"})]), make_node("n2")]
    result = _compute(make_inputs(nodes, ON_DEMAND), "n1", scheduler=pinned)
    assert result.command is None and "default/a: needs its node" in result.why_not


def test_pods_landing_on_a_node_that_is_not_initialized_do_not_count() -> None:
    nodes = [make_node("n1", pods=[make_pod("a")]), make_node("booting", initialized=False)]
    result = _compute(make_inputs(nodes, ON_DEMAND), "n1")
    assert result.command is None
    assert "would schedule against a non-initialized node booting" in result.why_not


def test_more_than_one_new_node_is_not_a_consolidation() -> None:
    huge = instance_type("huge", 16, price=5.0)
    big = make_provisioner("big", consolidation=True, capacity_types=["on-demand"], instance_types=[huge])
    # the pods do not tolerate big's taint: only default's 4-cpu type can take them, one per node
    taint = Taint("dedicated", "big", "NoSchedule")
    assert big.view.spec is not None
    spec = dataclasses.replace(big.view.spec, taints=(taint,))
    tainted = dataclasses.replace(big, view=dataclasses.replace(big.view, spec=spec))
    provisioners = [make_provisioner(capacity_types=["on-demand"], instance_types=[MEDIUM]), tainted]
    node = make_node("n1", huge, provisioner="big", pods=[make_pod(f"p{i}", cpu=3.5) for i in range(3)])
    assert _compute(make_inputs([node], provisioners), "n1").why_not == "can't remove without creating 3 nodes"


DO_NOT_CONSOLIDATE = {
    "true opts out": ("true", True, "karpenter.sh/do-not-consolidate annotation exists"),
    "false means nothing (enabled)": ("false", True, None),
    "false means nothing (disabled)": ("false", False, "provisioner default has consolidation disabled"),
    "no annotation, disabled": (None, False, "provisioner default has consolidation disabled"),
}


@pytest.mark.parametrize(("value", "enabled", "why"), DO_NOT_CONSOLIDATE.values(), ids=DO_NOT_CONSOLIDATE.keys())
def test_consolidation_eligibility(value: str | None, enabled: bool, why: str | None) -> None:
    annotations = {} if value is None else {L.DO_NOT_CONSOLIDATE: value}
    node = make_node("n1", annotations=annotations)
    snap = make_inputs([node], [make_provisioner(consolidation=enabled)])
    assert consolidation_blocker(node, snap) == why


def test_worst_launch_price_is_the_dearest_spot_price_if_spot_is_allowed() -> None:
    it = make_instance_type("x", cpu=2, price=0.5, spot_price=0.2, zones=("zone-a", "zone-b"))
    it = dataclasses.replace(it, offerings=(*it.offerings[:-1], dataclasses.replace(it.offerings[-1], price=0.3)))
    assert worst_launch_price(it, Requirements()) == 0.3
    on_demand = Requirements.from_labels({L.CAPACITY_TYPE: "on-demand"})
    assert worst_launch_price(it, on_demand) == 0.5
    assert worst_launch_price(it, Requirements.from_labels({L.ZONE: "zone-z"})) == float("inf")


def test_filter_out_same_type_refuses_a_replacement_of_a_removed_type_at_its_price() -> None:
    nodes = [make_node(f"n{i}", MEDIUM, pods=[make_pod(f"p{i}", cpu=1.5)]) for i in range(2)]
    snap = make_inputs(nodes, ON_DEMAND)
    cmd = _compute(snap, "n0", "n1").command
    assert cmd is not None and [it.name for it in cmd.replacements[0].instance_type_options] == ["medium"]
    assert filter_out_same_type(cmd) is None
    delete = Command(CONSOLIDATION, cmd.candidates)
    assert filter_out_same_type(delete) is delete


def test_a_replacement_launches_as_the_cloud_would_no_gpu_type_for_cpu_pods() -> None:
    # The replacement's planned launch (its price in the decision log) follows the same rule as the
    # cloud's create(): a GPU type is only for pods that need one, however cheap its spot offering.
    gpu = make_instance_type(
        "g4dn.xlarge", cpu=4, memory_gib=16, gpus=1, price=0.53, spot_price=0.02, zones=("zone-a",)
    )
    node = make_node("n1", LARGE, pods=[make_pod("a", cpu=1.5)])
    provisioner = make_provisioner(consolidation=True, instance_types=[SMALL, MEDIUM, LARGE, gpu])
    result = _compute(make_inputs([node], [provisioner]), "n1")
    assert result.command is not None
    (replacement,) = result.command.replacements
    assert "g4dn.xlarge" in [it.name for it in replacement.instance_type_options]
    assert replacement.launch is not None and replacement.launch.instance_type.name == "small"


def test_no_consolidation_method_acts_while_the_cluster_is_consolidated() -> None:
    nodes = [make_node("e1"), make_node("n1", LARGE, pods=[make_pod("a")]), make_node("n2", LARGE)]
    inputs = make_inputs(nodes, ON_DEMAND, consolidated=True)
    for method in (EmptyNodeConsolidation(), MultiNodeConsolidation(), SingleNodeConsolidation()):
        assert method.compute(inputs, schedule).command is None


def test_a_node_that_arrived_for_a_commands_pods_settles_before_it_is_a_candidate_again() -> None:
    # a command ran from at(0) until its candidates were gone at at(30)
    span = (Displacement(at(0), at(30)),)
    nodes = [
        make_node("old", pods=[make_pod("a")], created=at(-100)),  # before the command: a candidate
        make_node("during", pods=[make_pod("b")], created=at(10)),  # its replacement or a displaced pod's node
        make_node("after", pods=[make_pod("c")], created=at(80)),  # launched within 60 s of its end
        make_node("later", pods=[make_pod("d")], created=at(95)),  # more than 60 s after: unrelated
    ]

    def names(now: float) -> set[str]:
        inputs = dataclasses.replace(make_inputs(nodes, ON_DEMAND, now=now), displacements=span)
        cands, events = consolidation_candidates(inputs)
        settling = {e.node for e in events if "settles until" in e.message}
        assert settling.isdisjoint(c.name for c in cands)
        return {c.name for c in cands}

    assert names(at(100)) == {"old", "later"}
    assert names(at(10 + SETTLE_SECONDS)) == {"old", "later", "during"}  # 5 min after its creation
    assert names(at(80 + SETTLE_SECONDS)) == {"old", "later", "during", "after"}
    # without the span (no command ran) every node is a candidate
    assert {c.name for c in consolidation_candidates(make_inputs(nodes, ON_DEMAND, now=at(100)))[0]} == {
        "old",
        "during",
        "after",
        "later",
    }


def test_the_price_of_the_nodes_kube_schedulers_placement_needs_is_recorded_on_the_command() -> None:
    # what consolidation by value counts against the command's saving (`bestvalue.value`)
    result = _compute(kube_scheduler_spill(ZONAL_LARGE), "c")
    assert result.command is not None and result.command.spill == 0.10
    plain = make_inputs([make_node("n1", pods=[make_pod("a")]), make_node("n2", pods=[make_pod("b")])], ON_DEMAND)
    cmd = _compute(plain, "n1").command
    assert cmd is not None and cmd.spill == 0.0
