"""One deprovisioning pass: strategy order, the validation wait and re-validation (spec §6.2, §6.6)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from controller.core import labels as L
from controller.core.labels import BINDING_HOLD
from controller.decisions import IGNORED, LAUNCH_FAILED, LAUNCHED, NOMINATED, UNSCHEDULABLE, WAITING
from controller.deprovisioning.candidates import candidates
from controller.deprovisioning.decide import Pending, decide, next_pass_at
from controller.deprovisioning.types import (
    CONSOLIDATION,
    SINGLE_NODE_CONSOLIDATION,
    Command,
    DeprovisioningSettings,
    Inputs,
)
from controller.scheduling.scheduler import schedule
from controller.state.snapshot import NodeView, PodView
from tests.builders.deprovisioning import (
    LARGE,
    MEDIUM,
    ZONAL_LARGE,
    ZONAL_SMALL,
    at,
    cheap_prefix_and_dear_node,
    kube_scheduler_spill,
    later,
    make_inputs,
    make_node,
    make_pod,
    make_provisioner,
)

SETTINGS = DeprovisioningSettings()
ALL_ON = [make_provisioner(consolidation=True, ttl_expired=100, capacity_types=["on-demand"])]


def _pass(snap: Inputs, pending=None, settings=SETTINGS):  # type: ignore[no-untyped-def]
    return decide(snap, pending, schedule, settings)


def test_expiration_goes_before_emptiness_and_consolidation() -> None:
    nodes = [make_node("old", pods=[make_pod("a")], created=at(0)), make_node("empty", created=at(150))]
    decision = _pass(make_inputs(nodes, ALL_ON, now=at(120)))
    assert decision.execute is not None and decision.execute.reason == "expiration/delete"
    assert decision.execute.node_names == ("old",)


def test_emptiness_goes_before_consolidation() -> None:
    provs = [make_provisioner(ttl_empty=5), make_provisioner("c", consolidation=True)]
    nodes = [
        make_node("e", annotations={L.EMPTINESS_TIMESTAMP: "2024-01-01T00:00:00Z"}),
        make_node("c1", provisioner="c"),
    ]
    decision = _pass(make_inputs(nodes, provs, now=at(10)))
    assert decision.execute is not None and decision.execute.reason == "emptiness/delete"
    assert decision.execute.node_names == ("e",)


def test_markers_come_with_every_pass() -> None:
    decision = _pass(make_inputs([make_node("e")], [make_provisioner(ttl_empty=30)], now=at(3)))
    assert [(a.node, a.key) for a in decision.annotations] == [("e", L.EMPTINESS_TIMESTAMP)]
    assert decision.idle


def test_consolidation_waits_for_validation_then_acts() -> None:
    nodes = [make_node("n1", LARGE, pods=[make_pod("a")]), make_node("n2", MEDIUM, pods=[make_pod("b")])]
    snap = make_inputs(nodes, ALL_ON, now=at(0))
    first = _pass(snap)
    assert first.execute is None and first.pending is not None
    # Multi-node: a large and a medium node, half used, become one small node.
    assert first.pending.command.node_names == ("n1", "n2") and first.pending.since == at(0)
    waiting = _pass(later(snap, at(14.9)), first.pending)
    assert waiting.execute is None and waiting.pending is first.pending
    done = _pass(later(snap, at(15)), first.pending)
    assert done.execute is not None and done.execute.reason == "consolidation/replace"
    assert done.execute.node_names == ("n1", "n2") and done.method == "multinodeconsolidation"
    assert [it.name for it in done.execute.replacements[0].instance_type_options] == ["small"]


def test_a_command_invalidated_during_the_wait_is_dropped() -> None:
    nodes = [make_node("n1", LARGE, pods=[make_pod("a")]), make_node("n2", MEDIUM, pods=[make_pod("b")])]
    first = _pass(make_inputs(nodes, ALL_ON, now=at(0)))
    assert first.pending is not None
    crowded = [
        make_node("n1", LARGE, pods=[make_pod("a")]),
        make_node("n2", MEDIUM, pods=[make_pod("b"), make_pod("c", cpu=3)]),
    ]
    later = _pass(make_inputs(crowded, ALL_ON, now=at(20)), first.pending)
    assert later.execute is None and later.pending is None
    assert later.dropped.startswith("command is no longer valid")


def test_a_nominated_candidate_invalidates_the_command() -> None:
    nodes = [make_node("n1", LARGE, pods=[make_pod("a")]), make_node("n2", MEDIUM, pods=[make_pod("b")])]
    first = _pass(make_inputs(nodes, ALL_ON, now=at(0)))
    assert first.pending is not None
    nominated = [make_node("n1", LARGE, pods=[make_pod("a")], nominated=True), nodes[1]]
    assert _pass(make_inputs(nominated, ALL_ON, now=at(15)), first.pending).dropped


def test_empty_node_command_leaves_out_nodes_no_longer_candidates() -> None:
    nodes = [make_node("e1"), make_node("e2")]
    first = _pass(make_inputs(nodes, ALL_ON, now=at(0)))
    assert first.pending is not None and first.pending.method == "emptynodeconsolidation"
    later = [make_node("e1"), make_node("e2", nominated=True)]
    done = _pass(make_inputs(later, ALL_ON, now=at(15)), first.pending)
    assert done.execute is not None and done.execute.node_names == ("e1",)
    refilled = [make_node("e1", pods=[make_pod("a")]), make_node("e2")]
    assert _pass(make_inputs(refilled, ALL_ON, now=at(15)), first.pending).dropped


def test_a_replacement_must_still_be_offered_after_the_wait() -> None:
    nodes = [make_node("big", LARGE, pods=[make_pod("a", cpu=1.5)])]
    first = _pass(make_inputs(nodes, ALL_ON, now=at(0)))
    assert first.pending is not None and first.pending.command.reason == "consolidation/replace"
    ok = _pass(make_inputs(nodes, ALL_ON, now=at(15)), first.pending)
    assert ok.execute is not None and ok.execute.reason == "consolidation/replace"
    grown = [make_node("big", LARGE, pods=[make_pod("a", cpu=1.5), make_pod("b", cpu=1.5)])]
    assert _pass(make_inputs(grown, ALL_ON, now=at(15)), first.pending).dropped


def test_a_command_kube_schedulers_placement_would_undo_is_dropped_at_validation() -> None:
    # computed when "k" would have found room; by its validation kube-scheduler would leave it none
    snap = kube_scheduler_spill(ZONAL_SMALL)
    (cand,) = [c for c in candidates(snap, lambda c: True) if c.name == "c"]
    pending = Pending(Command(CONSOLIDATION, (cand,)), SINGLE_NODE_CONSOLIDATION, at(0))
    decision = _pass(later(snap, at(15)), pending)
    assert decision.execute is None and "kube-scheduler would find no room for 1 of its pods" in decision.dropped


def test_a_validated_command_carries_the_price_of_the_nodes_its_spilled_pods_need_now() -> None:
    # computed with no spill; at its validation kube-scheduler would leave "k" to a new $0.10/h node
    snap = kube_scheduler_spill(ZONAL_LARGE)
    (cand,) = [c for c in candidates(snap, lambda c: True) if c.name == "c"]
    pending = Pending(Command(CONSOLIDATION, (cand,)), SINGLE_NODE_CONSOLIDATION, at(0))
    decision = _pass(later(snap, at(15)), pending)
    assert decision.execute is not None and decision.execute.node_names == ("c",) and decision.execute.spill == 0.10


def test_a_zero_validation_wait_acts_in_the_same_pass() -> None:
    nodes = [make_node("n1", LARGE, pods=[make_pod("a")]), make_node("n2", MEDIUM, pods=[make_pod("b")])]
    decision = _pass(make_inputs(nodes, ALL_ON), settings=DeprovisioningSettings(validation_wait_seconds=0))
    assert decision.execute is not None and decision.execute.node_names == ("n1", "n2")


def test_nothing_to_do_is_idle() -> None:
    decision = _pass(make_inputs([make_node("n1", MEDIUM, pods=[make_pod("a", cpu=3)])], ALL_ON))
    assert decision.idle and decision.execute is None


def pinned(name: str, node: str) -> PodView:
    """A 1-cpu pod pinned to its node's host: room elsewhere, but only the simulation can tell it
    may not move."""
    pod = make_pod(name)
    assert pod.request is not None
    return dataclasses.replace(pod, request=dataclasses.replace(pod.request, node_selector={L.HOSTNAME: node}))


@dataclass(frozen=True)
class Spent:
    def spent(self) -> bool:
        return True


def test_a_pass_stopped_on_its_budget_is_not_idle_and_says_where_to_continue() -> None:
    """Issue 21: an incomplete pass must not set the consolidated flag (the rest of the candidates
    would never be looked at); the next pass gets its progress back and goes on: repack
    consolidation's prefix sizes (1, 2, 3) one a pass, then single-node consolidation's sweep,
    which resumes where it stopped however often repack starts again."""
    on_demand = [make_provisioner(consolidation=True, capacity_types=["on-demand"])]
    nodes = [make_node(f"n{i}", MEDIUM, pods=[pinned(f"p{i}", f"n{i}")], created=at(i)) for i in range(3)]
    inputs = dataclasses.replace(make_inputs(nodes, on_demand), budget=Spent())
    first = _pass(inputs)
    assert first.incomplete and not first.idle and first.method == "repackconsolidation"
    assert first.covered["repackconsolidation"] == 1 and first.progress.repack == 1
    second = _pass(dataclasses.replace(inputs, progress=first.progress))
    assert second.method == "repackconsolidation" and second.covered["repackconsolidation"] == 2
    third = _pass(dataclasses.replace(inputs, progress=second.progress))
    assert third.incomplete and third.method == "singlenodeconsolidation" and third.progress.repack == 0
    assert third.covered["singlenodeconsolidation"] == 1 and third.progress.single_after
    progress = third.progress
    for _ in range(3):  # repack's sizes again, then single-node goes on after its first candidate
        later = _pass(dataclasses.replace(inputs, progress=progress))
        progress = later.progress
    assert later.method == "singlenodeconsolidation"
    assert progress.single_after not in ("", third.progress.single_after)
    for _ in range(3):
        last = _pass(dataclasses.replace(inputs, progress=progress))
        progress = last.progress
    # the sweep reached its last candidate: single-node finished with nothing, the next starts anew
    assert progress.single_after == "" and last.covered["singlenodeconsolidation"] == 1 and last.idle


BY_VALUE = DeprovisioningSettings(consolidation_order="value")


def test_by_value_the_dear_delete_goes_before_the_cheap_prefix() -> None:
    """Issue 21: Karpenter v0.31's order acts on multi-node consolidation's prefix of the cheapest
    to disrupt (three mediums into one large: $0.20/h for 4.5 of disruption); by value the large
    node holding one pod goes first ($0.40/h for 2)."""
    inputs = cheap_prefix_and_dear_node()
    first = _pass(inputs)
    assert first.pending is not None and first.pending.method == "multinodeconsolidation"
    assert first.pending.command.node_names == ("cheap0", "cheap1", "cheap2")
    by_value = _pass(inputs, settings=BY_VALUE)
    assert by_value.pending is not None and by_value.pending.method == "singlenodeconsolidation"
    command = by_value.pending.command
    assert command.node_names == ("dear",) and command.reason == "consolidation/delete"
    assert {"multinodeconsolidation", "singlenodeconsolidation"} <= by_value.covered.keys()
    # validated after the wait as the method that offered it, then executed
    done = _pass(later(inputs, at(15)), by_value.pending, settings=BY_VALUE)
    assert done.execute is not None and done.execute.node_names == ("dear",)
    assert done.method == "singlenodeconsolidation"


def test_by_value_the_methods_before_consolidation_still_go_first() -> None:
    nodes = [make_node("old", pods=[make_pod("a")], created=at(0)), make_node("empty", created=at(150))]
    decision = _pass(make_inputs(nodes, ALL_ON, now=at(120)), settings=BY_VALUE)
    assert decision.execute is not None and decision.execute.reason == "expiration/delete"


def test_by_value_nothing_to_do_is_idle() -> None:
    nodes = [make_node("n1", MEDIUM, pods=[make_pod("a", cpu=3)])]
    decision = _pass(make_inputs(nodes, ALL_ON), settings=BY_VALUE)
    assert decision.idle and "repackconsolidation" in decision.covered


def test_by_value_a_pass_stopped_on_its_budget_is_not_idle_and_continues() -> None:
    on_demand = [make_provisioner(consolidation=True, capacity_types=["on-demand"])]
    nodes = [make_node(f"n{i}", MEDIUM, pods=[pinned(f"p{i}", f"n{i}")], created=at(i)) for i in range(3)]
    inputs = dataclasses.replace(make_inputs(nodes, on_demand), budget=Spent())
    first = _pass(inputs, settings=BY_VALUE)
    assert first.incomplete and not first.idle and first.progress.single_after
    second = _pass(dataclasses.replace(inputs, progress=first.progress), settings=BY_VALUE)
    assert second.incomplete and second.progress.single_after not in ("", first.progress.single_after)
    third = _pass(dataclasses.replace(inputs, progress=second.progress), settings=BY_VALUE)
    assert third.progress.single_after == "" and third.covered["singlenodeconsolidation"] == 1


# When the next pass is due (Karpenter's requeue, spec §6.2) ----------------------------------


def test_after_a_complete_pass_that_did_nothing_the_next_waits_the_poll_period() -> None:
    decision = _pass(make_inputs([make_node("n1", MEDIUM, pods=[make_pod("a", cpu=3)])], ALL_ON, now=at(7)))
    assert decision.idle
    assert next_pass_at(decision, at(7), SETTINGS) == at(17)
    assert next_pass_at(decision, at(7), DeprovisioningSettings(poll_period_seconds=2)) == at(9)


def test_a_pending_command_is_due_at_its_validation_time_even_before_the_poll_period() -> None:
    nodes = [make_node("n1", LARGE, pods=[make_pod("a")]), make_node("n2", MEDIUM, pods=[make_pod("b")])]
    first = _pass(make_inputs(nodes, ALL_ON, now=at(0)))
    assert next_pass_at(first, at(0), SETTINGS) == at(15)
    short = DeprovisioningSettings(validation_wait_seconds=3)
    assert next_pass_at(first, at(0), short) == at(3)
    waiting = _pass(make_inputs(nodes, ALL_ON, now=at(2)), first.pending, short)
    assert next_pass_at(waiting, at(2), short) == at(3)  # not pushed back by a pass while it waits


def test_a_pass_that_acted_dropped_a_command_or_stopped_short_is_followed_at_once() -> None:
    nodes = [make_node("n1", LARGE, pods=[make_pod("a")]), make_node("n2", MEDIUM, pods=[make_pod("b")])]
    acted = _pass(make_inputs(nodes, ALL_ON, now=at(5)), settings=DeprovisioningSettings(validation_wait_seconds=0))
    assert acted.execute is not None and next_pass_at(acted, at(5), SETTINGS) == at(5)
    first = _pass(make_inputs(nodes, ALL_ON, now=at(0)))
    crowded = [nodes[0], make_node("n2", MEDIUM, pods=[make_pod("b"), make_pod("c", cpu=3)])]
    dropped = _pass(make_inputs(crowded, ALL_ON, now=at(20)), first.pending)
    assert dropped.dropped and next_pass_at(dropped, at(20), SETTINGS) == at(20)
    on_demand = [make_provisioner(consolidation=True, capacity_types=["on-demand"])]
    pinned_nodes = [make_node(f"n{i}", MEDIUM, pods=[pinned(f"p{i}", f"n{i}")], created=at(i)) for i in range(3)]
    stopped = _pass(dataclasses.replace(make_inputs(pinned_nodes, on_demand, now=at(9)), budget=Spent()))
    assert stopped.incomplete and next_pass_at(stopped, at(9), SETTINGS) == at(9)


# Pods kube-scheduler has not decided yet (issue 21) -------------------------------------------


def test_while_pods_wait_for_kube_scheduler_consolidation_does_not_run_and_says_why() -> None:
    nodes = [make_node("n1", LARGE, pods=[make_pod("a")]), make_node("n2", MEDIUM, pods=[make_pod("b")])]
    assert _pass(make_inputs(nodes, ALL_ON)).pending is not None  # without them: multi-node consolidation
    decision = _pass(make_inputs(nodes, ALL_ON, queued=[make_pod("new-1"), make_pod("new-2")]))
    assert decision.pending is None and decision.execute is None
    assert decision.waiting == "2 pod(s) not yet decided by kube-scheduler (the oldest default/new-1): their room stays"
    assert not decision.idle  # consolidation did not look: the consolidated flag must not be set
    assert next_pass_at(decision, at(0), SETTINGS) == at(10)  # it did nothing: the polling period
    assert "multinodeconsolidation" not in decision.covered


def test_an_empty_node_is_kept_while_a_pod_waits_for_kube_scheduler() -> None:
    nodes = [make_node("empty", MEDIUM), make_node("n2", MEDIUM, pods=[make_pod("b", cpu=3)])]
    assert _pass(make_inputs(nodes, ALL_ON)).pending is not None  # empty-node consolidation
    decision = _pass(make_inputs(nodes, ALL_ON, queued=[make_pod("fits-empty", cpu=2)]))
    assert decision.pending is None and decision.waiting


def test_expiration_and_emptiness_still_act_while_pods_wait_for_kube_scheduler() -> None:
    provs = [make_provisioner(ttl_empty=5), make_provisioner("x", ttl_expired=100)]
    stamped = {L.EMPTINESS_TIMESTAMP: "2024-01-01T00:00:00Z"}
    queued = [make_pod("new")]
    empty = _pass(make_inputs([make_node("e", annotations=stamped)], provs, now=at(10), queued=queued))
    assert empty.execute is not None and empty.execute.reason == "emptiness/delete" and not empty.waiting
    old = [make_node("old", provisioner="x", pods=[make_pod("a")], created=at(0))]
    expired = _pass(make_inputs(old, provs, now=at(120), queued=queued))
    assert expired.execute is not None and expired.execute.deprovisioner == "expiration"


def test_a_command_due_for_validation_is_dropped_while_pods_wait_for_kube_scheduler() -> None:
    """Computed while none waited; 15 s later a pod kube-scheduler has not tried yet would lose
    the room the command removes. Dropped: the next pass (at once) waits, then computes afresh."""
    nodes = [make_node("n1", LARGE, pods=[make_pod("a")]), make_node("n2", MEDIUM, pods=[make_pod("b")])]
    first = _pass(make_inputs(nodes, ALL_ON, now=at(0)))
    assert first.pending is not None
    dropped = _pass(make_inputs(nodes, ALL_ON, now=at(15), queued=[make_pod("new")]), first.pending)
    assert dropped.execute is None and dropped.pending is None
    assert dropped.dropped.startswith("command is no longer valid, 1 pod(s) not yet decided by kube-scheduler")
    assert next_pass_at(dropped, at(15), SETTINGS) == at(15)
    empty = [make_node("e1"), make_node("e2")]
    computed = _pass(make_inputs(empty, ALL_ON, now=at(0)))
    assert computed.pending is not None and computed.pending.method == "emptynodeconsolidation"
    assert _pass(make_inputs(empty, ALL_ON, now=at(15), queued=[make_pod("new")]), computed.pending).dropped
    done = _pass(make_inputs(nodes, ALL_ON, now=at(15)), first.pending)  # none waiting: it goes on
    assert done.execute is not None


def test_by_value_consolidation_also_waits_for_kube_scheduler() -> None:
    nodes = [make_node("n1", LARGE, pods=[make_pod("a")]), make_node("n2", MEDIUM, pods=[make_pod("b")])]
    decision = _pass(make_inputs(nodes, ALL_ON, queued=[make_pod("new")]), settings=BY_VALUE)
    assert decision.pending is None and decision.waiting and "repackconsolidation" not in decision.covered


# A scale-up under way: pending pods karpy brings capacity for, nodes arriving (issue 21) -------


def _consolidatable() -> list[NodeView]:
    """Two half-used nodes multi-node consolidation would replace by one small node."""
    return [make_node("n1", LARGE, pods=[make_pod("a")]), make_node("n2", MEDIUM, pods=[make_pod("b")])]


@pytest.mark.parametrize("outcome", [LAUNCHED, NOMINATED, WAITING, None])
def test_a_pending_pod_karpy_brings_capacity_for_or_has_not_evaluated_holds_consolidation(outcome: str | None) -> None:
    assert _pass(make_inputs(_consolidatable(), ALL_ON)).pending is not None  # without it: consolidation
    pods = [make_pod("new-1", cpu=0.5), make_pod("new-2", cpu=0.5)]
    said = {"default/new-1": outcome} if outcome is not None else {}
    decision = _pass(make_inputs(_consolidatable(), ALL_ON, pending=pods, evaluations=said))
    assert decision.pending is None and decision.execute is None and not decision.idle
    assert decision.waiting == (
        "scale-up under way: 2 pending pod(s) karpy is bringing capacity for or has not evaluated yet "
        f"(the oldest default/new-1: {outcome or 'not evaluated yet'})"
    )
    assert "multinodeconsolidation" not in decision.covered
    assert next_pass_at(decision, at(0), SETTINGS) == at(10)


@pytest.mark.parametrize("outcome", [UNSCHEDULABLE, LAUNCH_FAILED, IGNORED])
def test_a_pod_karpy_found_no_room_for_does_not_hold_consolidation(outcome: str) -> None:
    """An impossible pod (it fits no instance type) is pending forever: consolidation goes on."""
    huge = make_pod("huge", cpu=1000)
    decision = _pass(make_inputs(_consolidatable(), ALL_ON, pending=[huge], evaluations={huge.key: outcome}))
    assert not decision.waiting and decision.pending is not None
    assert decision.pending.command.node_names == ("n1", "n2")


def test_a_node_karpy_launched_not_yet_initialized_holds_consolidation() -> None:
    arriving = make_node("arriving", MEDIUM, initialized=False)
    decision = _pass(make_inputs([*_consolidatable(), arriving], ALL_ON))
    assert decision.pending is None and decision.execute is None
    assert decision.waiting == (
        "scale-up under way: 1 node(s) karpy launched not yet initialized or held for binding "
        "(the first arriving: not initialized)"
    )
    going = make_node("going", MEDIUM, initialized=False, deleting=True)  # being deleted: no pod lands there
    assert _pass(make_inputs([*_consolidatable(), going], ALL_ON)).pending is not None


def test_a_node_that_never_initializes_holds_consolidation_for_15_minutes_only() -> None:
    """A node whose startup taint is never lifted stays uninitialized: consolidation waits for it
    as long as Karpenter waits for a Machine to register, not forever."""
    young = make_node("stuck", MEDIUM, initialized=False, created=at(-899))
    waiting = _pass(make_inputs([*_consolidatable(), young], ALL_ON)).waiting
    assert waiting.endswith("(the first stuck: not initialized)")
    old = make_node("stuck", MEDIUM, initialized=False, created=at(-900))
    later = _pass(make_inputs([*_consolidatable(), old], ALL_ON))
    assert not later.waiting and later.pending is not None


def test_a_node_held_for_binding_holds_consolidation() -> None:
    held = make_node("held", MEDIUM, annotations={BINDING_HOLD: "true"})
    decision = _pass(make_inputs([*_consolidatable(), held], ALL_ON))
    assert decision.pending is None
    assert decision.waiting.endswith("(the first held: held for binding)")


def test_a_pending_pod_nominated_to_a_node_holds_consolidation() -> None:
    """karpy nominated it for kube-scheduler (`provisioning/nominations.py`): no longer
    provisionable, but its room on that node is about to be taken."""
    nominated = dataclasses.replace(make_pod("new", cpu=0.5), nominated_node_name="n2")
    decision = _pass(make_inputs(_consolidatable(), ALL_ON, pending=[nominated]))
    assert decision.pending is None and decision.execute is None
    assert decision.waiting == (
        "scale-up under way: 1 pending pod(s) nominated to a node for kube-scheduler (the oldest default/new: to n2)"
    )


def test_emptiness_and_expiration_still_act_during_a_scale_up() -> None:
    provs = [make_provisioner(ttl_empty=5), make_provisioner("x", ttl_expired=100)]
    stamped = {L.EMPTINESS_TIMESTAMP: "2024-01-01T00:00:00Z"}
    coming = [make_pod("new")]
    launched = {"default/new": LAUNCHED}
    arriving = make_node("arriving", initialized=False)
    empty = make_node("e", annotations=stamped)
    for inputs in (
        make_inputs([empty], provs, now=at(10), pending=coming, evaluations=launched),
        make_inputs([empty, arriving], provs, now=at(10)),
    ):
        decision = _pass(inputs)
        assert decision.execute is not None and decision.execute.reason == "emptiness/delete"
        assert decision.execute.node_names == ("e",)
    old = [make_node("old", provisioner="x", pods=[make_pod("a")], created=at(0))]
    expired = _pass(make_inputs(old, provs, now=at(120), pending=coming, evaluations=launched))
    assert expired.execute is not None and expired.execute.deprovisioner == "expiration"


def test_a_command_due_for_validation_is_dropped_when_a_scale_up_starts() -> None:
    first = _pass(make_inputs(_consolidatable(), ALL_ON, now=at(0)))
    assert first.pending is not None
    coming = make_inputs(_consolidatable(), ALL_ON, now=at(15), pending=[make_pod("new")], evaluations={})
    launched = _pass(coming, first.pending)  # not evaluated yet: karpy has not decided
    assert launched.execute is None and launched.pending is None
    assert launched.dropped.startswith("command is no longer valid, scale-up under way: 1 pending pod(s)")
    arriving = make_node("arriving", initialized=False)
    dropped = _pass(make_inputs([*_consolidatable(), arriving], ALL_ON, now=at(15)), first.pending)
    assert dropped.dropped.startswith("command is no longer valid, scale-up under way: 1 node(s)")
    impossible = _pass(
        make_inputs(_consolidatable(), ALL_ON, now=at(15), pending=[make_pod("huge", cpu=1000)]), first.pending
    )  # by default a pending pod was found unschedulable: it goes on
    assert impossible.execute is not None
