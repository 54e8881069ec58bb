"""The acting edge: `DeprovisioningController.reconcile()` over FakeKube, cluster state and a fake cloud."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from controller.cloudprovider.base import Instance
from controller.cloudprovider.drift import Drift, DriftReason
from controller.cloudprovider.errors import InsufficientCapacityError
from controller.core import labels as L
from controller.core.labels import BINDING_HOLD, DEPROVISIONING_CORDON
from controller.decisions import DEPROVISIONING_FAILED, LAUNCHED, UNSCHEDULABLE, Decision
from controller.deprovisioning.types import MULTI_NODE_CONSOLIDATION, REPACK_CONSOLIDATION, SINGLE_NODE_CONSOLIDATION
from controller.kube.errors import KubeError
from controller.kube.resources import AWSNODETEMPLATES, NODES, PDBS, PODS, PROVISIONERS
from tests.builders.wire import make_awsnodetemplate, make_pdb, make_pod, make_provisioner
from tests.fakes.deprovisioning import World, consolidating, marked, replacing_big, restarted

SIMULATIONS = "karpenter_provisioner_scheduling_simulation_duration_seconds_count"


def test_nothing_happens_before_state_is_synced() -> None:
    world = World()
    world.node("n1")
    world.kube.put(PROVISIONERS, make_provisioner(ttlSecondsAfterEmpty=5))
    world.controller.reconcile()
    assert world.kube.calls == []


def test_empty_node_is_stamped_then_deleted_after_the_ttl() -> None:
    world = World()
    world.remember("karpenter_nodes_terminated", reason="emptiness/delete", provisioner="default")
    world.remember("karpenter_machines_terminated", reason="emptiness/delete", provisioner="default")
    world.remember("karpenter_deprovisioning_actions_performed", action="emptiness/delete", deprovisioner="emptiness")
    world.kube.put(PROVISIONERS, make_provisioner(ttlSecondsAfterEmpty=5))
    world.node("n1")
    world.reconcile()
    assert L.EMPTINESS_TIMESTAMP in world.kube.objects["nodes"]["n1"]["metadata"]["annotations"]
    world.reconcile(step=3)
    assert world.deleting() == []
    world.reconcile(step=3)  # past the TTL, but the stamping pass did nothing: the next is due at 10 s
    assert world.deleting() == []
    world.reconcile(step=4)
    assert world.deleting() == ["n1"]
    assert world.metric("karpenter_nodes_terminated", reason="emptiness/delete", provisioner="default") == 1
    assert world.metric("karpenter_machines_terminated", reason="emptiness/delete", provisioner="default") == 1
    assert (
        world.metric("karpenter_deprovisioning_actions_performed", action="emptiness/delete", deprovisioner="emptiness")
        == 1
    )
    assert any(e["reason"] == "DeprovisioningTerminating" for e in world.kube.events)


def n1_fits_on_n2(world: World) -> None:
    """Consolidation on; n1's pod fits on n2 beside n2's own, so n1 can go."""
    consolidating(world)
    world.node("n1")
    world.node("n2")
    world.pod("a", "n1")
    world.pod("b", "n2", cpu="2")


def test_a_delete_refused_by_the_api_server_ends_the_command_instead_of_holding_the_next_ones() -> None:
    world = World(validation_wait_seconds=0)
    n1_fits_on_n2(world)
    world.kube.fail_next["delete"] = KubeError("deleting nodes n1: not the leader")
    world.reconcile()
    assert world.deleting() == [] and not world.state.snapshot().nodes["n1"].marked_for_deletion
    world.reconcile(step=1)  # the command is over (nothing to wait for): not held for the deletion timeout
    world.reconcile(step=11)  # the next pass, after the poll period, deletes it
    assert world.deleting() == ["n1"]


def test_consolidation_deletes_only_after_the_validation_wait() -> None:
    world = World()
    n1_fits_on_n2(world)
    world.reconcile()
    assert world.deleting() == []
    world.reconcile(step=10)
    assert world.deleting() == []
    world.reconcile(step=5)
    assert world.deleting() == ["n1"]


def test_the_consolidated_flag_lapses_after_the_reset_time_even_if_nothing_changes() -> None:
    # Nomination ends without a watch event: only the reset time brings consolidation back. The
    # passes made every poll period while consolidated must not push that time back.
    world = World(validation_wait_seconds=0, poll_period_seconds=1, consolidated_reset_seconds=30)
    n1_fits_on_n2(world)
    world.sync()
    world.state.nominate(["n1", "n2"], world.clock.now() + 5)
    world.controller.reconcile()  # nothing to do: the consolidated flag is set
    for _ in range(25):
        world.clock.step(1)
        world.controller.reconcile()
    assert world.deleting() == []
    for _ in range(10):
        world.clock.step(1)
        world.controller.reconcile()
    assert world.deleting() == ["n1"]


# When the next full pass runs (decide.next_pass_at; spec §6.2) --------------------------------


def full_two_nodes(world: World) -> None:
    """n1 and n2 (4 CPU each) 3 CPU full: nothing to consolidate until a pod goes."""
    consolidating(world)
    world.node("n1")
    world.node("n2")
    world.pod("a", "n1", cpu="3")
    world.pod("b", "n2", cpu="3")


def test_after_an_idle_pass_a_change_waits_for_the_poll_period() -> None:
    """Every tick sees cluster state changed (as during a scale-up); the pass after an idle one
    still comes only after the poll period, and then acts on the change."""
    world = World(validation_wait_seconds=0)
    full_two_nodes(world)
    world.reconcile()
    idle = world.controller.last_decision
    assert idle is not None and idle.idle
    world.kube.delete(PODS, "b", "default")  # n2 is empty now: empty-node consolidation would delete it
    for _ in range(9):
        world.reconcile(step=1)
        assert world.controller.last_decision is idle and world.deleting() == []
    world.reconcile(step=0.9)  # 9.9 s after the idle pass
    assert world.controller.last_decision is idle and world.deleting() == []
    world.reconcile(step=0.1)
    assert world.controller.last_decision is not idle and world.deleting() == ["n2"]


def test_a_pass_that_acted_is_followed_at_once_by_the_next() -> None:
    world = World(validation_wait_seconds=0)
    full_two_nodes(world)
    world.kube.delete(PODS, "b", "default")
    world.reconcile()
    assert world.deleting() == ["n2"]
    world.kube.patch(NODES, "n2", {"metadata": {"finalizers": None}})  # gone
    world.kube.delete(PODS, "a", "default")
    world.reconcile(step=0.1)  # sees n2 gone: the command is over
    world.reconcile(step=0.1)  # the next pass, without waiting for a poll period
    assert world.deleting() == ["n1"]


def test_a_pending_command_is_validated_at_its_due_time_not_the_poll_period() -> None:
    world = World(validation_wait_seconds=3)
    n1_fits_on_n2(world)
    world.reconcile()
    computed = world.controller.last_decision
    assert computed is not None and computed.pending is not None
    for _ in range(2):
        world.reconcile(step=1)
        assert world.controller.last_decision is computed and world.deleting() == []
    world.reconcile(step=0.9)
    assert world.deleting() == []
    world.reconcile(step=0.1)  # 3 s: due
    assert world.deleting() == ["n1"]


def test_a_pending_command_longer_than_the_poll_period_is_not_recomputed_meanwhile() -> None:
    world = World()  # validation 15 s, poll period 10 s
    n1_fits_on_n2(world)
    world.reconcile()
    computed = world.controller.last_decision
    for _ in range(14):
        world.reconcile(step=1)
    assert world.controller.last_decision is computed and world.deleting() == []
    world.reconcile(step=1)
    assert world.deleting() == ["n1"]


def test_between_passes_the_emptiness_marker_still_follows_changes() -> None:
    world = World()
    world.kube.put(PROVISIONERS, make_provisioner(ttlSecondsAfterEmpty=30))
    world.node("n1")
    world.pod("a", "n1")
    world.reconcile()  # idle: the next full pass is 10 s away
    assert L.EMPTINESS_TIMESTAMP not in world.kube.objects["nodes"]["n1"]["metadata"].get("annotations", {})
    world.kube.delete(PODS, "a", "default")
    world.reconcile(step=1)
    assert world.kube.objects["nodes"]["n1"]["metadata"]["annotations"][L.EMPTINESS_TIMESTAMP] == (
        "2023-11-14T22:13:21Z"
    )
    world.pod("b", "n1")
    world.reconcile(step=1)
    assert L.EMPTINESS_TIMESTAMP not in world.kube.objects["nodes"]["n1"]["metadata"]["annotations"]


def test_an_empty_node_is_kept_while_a_pod_that_fits_it_waits_for_kube_scheduler() -> None:
    """Issue 21: a pod created but not yet tried by kube-scheduler (unbound, no PodScheduled
    condition) will take the room nodes have now; consolidation waits for it, and says so."""
    world = World(validation_wait_seconds=0)
    consolidating(world)
    world.node("n1")
    world.node("n2")
    world.pod("a", "n1", cpu="3")
    world.kube.put(PODS, make_pod("new", cpu="2", memory="1Mi", pending=False))  # only n2 has room for it
    world.reconcile()
    assert world.deleting() == []
    assert world.controller.last_pass["waiting"] == (
        "1 pod(s) not yet decided by kube-scheduler (the oldest default/new): their room stays"
    )
    for _ in range(3):
        world.reconcile(step=10)
        assert world.deleting() == []
    world.kube.bind("default", "new", "n2")  # kube-scheduler placed it
    world.reconcile(step=10)
    assert world.deleting() == [] and world.controller.last_pass["waiting"] == ""


def test_a_command_computed_before_a_pod_arrived_is_dropped_at_its_validation() -> None:
    world = World(validation_wait_seconds=3)
    consolidating(world)
    world.node("n1")
    world.node("n2")
    world.pod("a", "n1", cpu="3")
    world.reconcile()  # n2 is empty: empty-node consolidation's command waits for its validation
    assert world.controller.last_decision is not None and world.controller.last_decision.pending is not None
    world.kube.put(PODS, make_pod("new", cpu="2", memory="1Mi", pending=False))  # only n2 has room for it
    world.reconcile(step=3)
    assert world.deleting() == [] and world.controller.last_decision.dropped
    world.reconcile(step=1)  # dropped: the next pass at once, which waits for kube-scheduler
    assert world.deleting() == [] and world.controller.last_pass["waiting"]


def test_without_a_pod_waiting_for_kube_scheduler_that_empty_node_goes() -> None:
    world = World(validation_wait_seconds=0)
    consolidating(world)
    world.node("n1")
    world.node("n2")
    world.pod("a", "n1", cpu="3")
    world.reconcile()
    assert world.deleting() == ["n2"] and world.controller.last_pass["waiting"] == ""


def test_consolidation_waits_while_provisioning_brings_capacity_for_a_pending_pod() -> None:
    """Issue 21: the pod's last provisioning evaluation, in the shared decision log, says a node
    is coming for it: a scale-up is under way. Once provisioning finds no room for it (an
    impossible pod), it no longer holds consolidation back."""
    world = World(validation_wait_seconds=0)
    consolidating(world)
    world.node("n1")
    world.node("n2")
    world.pod("a", "n1", cpu="3")
    world.kube.put(PODS, make_pod("big", cpu="64", memory="1Mi"))  # marked Unschedulable by kube-scheduler
    world.decisions.evaluated(Decision("provisioning", LAUNCHED, "pod/default/big", "a new node n3 was launched"))
    world.reconcile()
    assert world.deleting() == []
    assert world.controller.last_pass["waiting"] == (
        "scale-up under way: 1 pending pod(s) karpy is bringing capacity for or has not evaluated yet "
        "(the oldest default/big: launched)"
    )
    world.decisions.evaluated(Decision("provisioning", UNSCHEDULABLE, "pod/default/big", "no instance type fits"))
    world.reconcile(step=10)
    assert world.deleting() == ["n2"] and world.controller.last_pass["waiting"] == ""


def test_replacement_is_ready_before_the_old_node_goes() -> None:
    world = World(validation_wait_seconds=0)
    world.remember("karpenter_nodes_created", reason="consolidation/replace", provisioner="default")
    world.remember("karpenter_machines_created", reason="consolidation/replace", provisioner="default")
    consolidating(world)
    world.node("big", "large")
    world.pod("a", "big", cpu="1.5")
    world.reconcile()
    assert world.unschedulable("big") and world.deleting() == []
    (request,) = world.cloud.create_calls
    assert [it.name for it in request.instance_type_options] == ["small", "medium"]
    new = next(n for n in world.kube.items(NODES) if n["metadata"]["name"] != "big")
    assert L.TERMINATION_FINALIZER in new["metadata"]["finalizers"]
    world.reconcile(step=2)
    assert world.deleting() == []  # the replacement is not initialized yet
    world.kube.patch(
        NODES,
        new["metadata"]["name"],
        {
            "metadata": {"labels": {L.INITIALIZED: "true"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        },
    )
    world.reconcile(step=2)
    assert world.deleting() == ["big"]
    assert world.metric("karpenter_nodes_created", reason="consolidation/replace", provisioner="default") == 1
    assert world.metric("karpenter_machines_created", reason="consolidation/replace", provisioner="default") == 1


def test_the_replacement_settles_after_its_command_before_it_is_consolidated() -> None:
    world = World(validation_wait_seconds=0)
    consolidating(world)
    world.node("big", "large")
    world.node("home", "large")  # never a candidate; full for now
    world.kube.patch(NODES, "home", {"metadata": {"annotations": {L.DO_NOT_CONSOLIDATE: "true"}}})
    world.pod("a", "big", cpu="1.5")
    world.pod("b", "home", cpu="7")
    world.reconcile()
    assert world.unschedulable("big")  # replaced by a small node
    new = next(n["metadata"]["name"] for n in world.kube.items(NODES) if n["metadata"]["name"] not in ("big", "home"))
    ready = [{"type": "Ready", "status": "True"}]
    world.kube.patch(NODES, new, {"metadata": {"labels": {L.INITIALIZED: "true"}}, "status": {"conditions": ready}})
    world.reconcile(step=2)
    assert world.deleting() == ["big"]
    world.kube.patch(NODES, "big", {"metadata": {"finalizers": None}})  # drained: the node goes
    world.kube.delete(PODS, "a")
    world.pod("a2", new, cpu="1.5")  # its successor, on the replacement
    world.kube.delete(PODS, "b")  # now "home" has room for it: deleting the replacement would save $/h
    world.reconcile(step=1)  # the command is over
    for _ in range(4):  # passes every poll period: the replacement settles, kept from consolidation
        world.reconcile(step=11)
        assert not world.unschedulable(new) and new not in world.deleting()
    assert any(e["reason"] == "Unconsolidatable" and "settles until" in e["message"] for e in world.kube.events)
    world.reconcile(step=300)  # 5 min after its creation it is a candidate again: deleted
    world.reconcile(step=1)
    assert new in world.deleting()


def test_a_command_that_moved_no_pod_leaves_no_node_settling() -> None:
    """Empty nodes deleted displace no pod: a node created right after (here a scale-up's) is a
    consolidation candidate at once, not one that settles for 5 min."""
    world = World(validation_wait_seconds=0)
    consolidating(world)
    world.node("idle", "large")
    world.reconcile()
    assert world.deleting() == ["idle"]
    world.kube.patch(NODES, "idle", {"metadata": {"finalizers": None}})  # it goes
    world.reconcile(step=1)  # the command is over
    world.node("big", "large")
    world.node("home", "large")  # never a candidate; room for big's pod
    world.kube.patch(NODES, "home", {"metadata": {"annotations": {L.DO_NOT_CONSOLIDATE: "true"}}})
    world.pod("a", "big", cpu="1.5")
    for _ in range(3):
        world.reconcile(step=11)
    assert "big" in world.deleting() or world.unschedulable("big")
    assert not any("settles until" in e["message"] for e in world.kube.events)


def test_failed_launch_uncordons_and_keeps_the_node() -> None:
    world = World(validation_wait_seconds=0)
    consolidating(world)
    world.node("big", "large")
    world.pod("a", "big", cpu="1.5")
    world.cloud.next_create_error = InsufficientCapacityError("no capacity")
    world.reconcile()
    assert not world.unschedulable("big") and world.deleting() == []
    assert DEPROVISIONING_CORDON not in world.kube.objects["nodes"]["big"]["metadata"]["annotations"]


def test_a_candidate_that_cannot_be_cordoned_stops_the_replace_before_any_launch() -> None:
    world = World(validation_wait_seconds=0)
    consolidating(world)
    world.node("big", "large")
    world.pod("a", "big", cpu="1.5")
    world.kube.fail_next["patch"] = KubeError("apiserver unavailable", 503)
    world.reconcile()
    assert world.cloud.create_calls == [] and world.deleting() == []
    assert not world.unschedulable("big")
    assert [n["metadata"]["name"] for n in world.kube.items(NODES)] == ["big"]
    (failed,) = [d for d in world.decisions.recent() if d.action == DEPROVISIONING_FAILED]
    assert "cordoning big failed" in failed.reason
    world.reconcile()  # the next pass tries again, and this time the cordon holds
    assert world.unschedulable("big") and len(world.cloud.create_calls) == 1


def test_a_replacement_that_never_initializes_is_given_up() -> None:
    world = World(validation_wait_seconds=0, replacement_timeout_seconds=60)
    consolidating(world)
    world.node("big", "large")
    world.pod("a", "big", cpu="1.5")
    world.reconcile()
    assert world.unschedulable("big")
    world.reconcile(step=61)
    assert not world.unschedulable("big") and world.deleting() == []


@pytest.mark.parametrize("blocker", ["do-not-evict", "pdb"])
def test_a_node_with_unevictable_pods_waits(blocker: str) -> None:
    world = World(validation_wait_seconds=0)
    consolidating(world)
    world.node("n1")
    world.node("n2")
    annotations = {L.DO_NOT_EVICT: "true"} if blocker == "do-not-evict" else {}
    world.pod("a", "n1", annotations=annotations)
    world.pod("b", "n2", annotations=annotations)
    if blocker == "pdb":
        world.kube.put(PDBS, make_pdb("web", {"app": "web"}, allowed=0))
    world.reconcile()
    world.reconcile(step=30)
    assert world.deleting() == []
    assert any(e["reason"] == "DeprovisioningBlocked" for e in world.kube.events)


def test_expired_node_is_replaced_before_it_is_deleted() -> None:
    world = World()
    world.kube.put(PROVISIONERS, make_provisioner(ttlSecondsUntilExpired=60))
    world.node("old", "large")
    world.pod("a", "old", cpu="3")
    world.reconcile(step=61)
    assert world.unschedulable("old") and len(world.cloud.create_calls) == 1 and world.deleting() == []
    new = next(n["metadata"]["name"] for n in world.kube.items(NODES) if n["metadata"]["name"] != "old")
    world.kube.patch(NODES, new, {"metadata": {"labels": {L.INITIALIZED: "true"}}})
    world.reconcile(step=1)
    assert world.deleting() == ["old"]


def test_no_new_command_until_the_last_ones_nodes_are_gone() -> None:
    world = World()
    world.kube.put(PROVISIONERS, make_provisioner(ttlSecondsUntilExpired=60))
    world.node("old", "large")
    world.node("older", "large")
    world.pod("a", "old", cpu="5")
    world.pod("b", "older", cpu="5")
    world.reconcile(step=61)
    (first,) = [n for n in ("old", "older") if world.unschedulable(n)]
    new = next(n["metadata"]["name"] for n in world.kube.items(NODES) if n["metadata"]["name"] not in ("old", "older"))
    world.kube.patch(NODES, new, {"metadata": {"labels": {L.INITIALIZED: "true"}}})
    world.reconcile(step=1)
    assert world.deleting() == [first]
    for _ in range(3):  # the first node still drains: the other expired node waits
        world.reconcile(step=1)
    (second,) = {"old", "older"} - {first}
    assert world.deleting() == [first] and not world.unschedulable(second)
    assert any(e["reason"] == "DeprovisioningWaitingDeletion" for e in world.kube.events)
    world.kube.patch(NODES, first, {"metadata": {"finalizers": None}})  # termination done: the node goes
    world.reconcile(step=1)  # sees it gone
    world.reconcile(step=1)
    assert second in world.deleting() or world.unschedulable(second)  # now the next one


# The deprovisioning cordon: marked, and lifted when no command holds it (cordon.py) ----------


def test_a_replace_cordons_and_marks_its_candidates_in_one_patch() -> None:
    world = World(validation_wait_seconds=0)
    replacing_big(world)
    (patch,) = [c[1][3] for c in world.kube.calls if c[0] == "patch" and c[1][:2] == ("nodes", "big")]
    assert patch["spec"] == {"unschedulable": True}
    assert patch["metadata"]["annotations"] == {DEPROVISIONING_CORDON: "true"}


def test_the_command_in_progress_keeps_its_cordon_across_passes() -> None:
    world = World(validation_wait_seconds=0)
    replacing_big(world)
    for _ in range(3):
        world.reconcile(step=1)
    assert world.unschedulable("big") and marked(world, "big") and world.deleting() == []


def test_a_restarted_controller_lifts_the_cordon_a_killed_one_left() -> None:
    world = World(validation_wait_seconds=0)
    new = replacing_big(world)
    world.controller = restarted(world, validation_wait_seconds=60)  # the command died with the old process
    world.reconcile(step=1)
    assert not world.unschedulable("big") and not marked(world, "big")
    assert world.deleting() == []
    assert new in world.kube.objects["nodes"]  # the replacement stays, as ordinary capacity


def test_a_marked_node_being_deleted_stays_cordoned() -> None:
    world = World(validation_wait_seconds=0)
    replacing_big(world)
    world.kube.delete(NODES, "big")  # the termination finalizer holds it; its cordon is termination's
    world.controller = restarted(world)
    world.reconcile(step=1)
    assert world.unschedulable("big") and world.deleting() == ["big"]
    assert not any(c[0] == "patch" and c[1][:2] == ("nodes", "big") and c[1][3].get("spec") == {"unschedulable": None}
                   for c in world.kube.calls)  # fmt: skip


def test_a_node_changed_since_the_snapshot_is_not_uncordoned_blindly() -> None:
    world = World(validation_wait_seconds=0)
    replacing_big(world)
    world.controller = restarted(world, validation_wait_seconds=60)
    world.sync()
    world.kube.delete(NODES, "big")  # deleted after the snapshot the pass will read
    world.controller.reconcile()
    assert world.unschedulable("big")  # the conditional patch met a conflict
    world.reconcile(step=1)
    assert world.unschedulable("big") and world.deleting() == ["big"]  # and the next pass sees it deleting


def test_a_conflict_leaves_the_cordon_to_the_next_pass() -> None:
    world = World(validation_wait_seconds=0)
    replacing_big(world)
    world.controller = restarted(world, validation_wait_seconds=60)
    world.sync()
    world.kube.patch(NODES, "big", {"metadata": {"labels": {"touched": "yes"}}})  # any change: a new resourceVersion
    world.controller.reconcile()
    assert world.unschedulable("big")
    world.reconcile(step=1)
    assert not world.unschedulable("big") and not marked(world, "big")


def test_a_node_also_held_for_binding_keeps_that_cordon() -> None:
    world = World(validation_wait_seconds=0)
    replacing_big(world)
    world.kube.patch(NODES, "big", {"metadata": {"annotations": {BINDING_HOLD: "true"}}})
    world.controller = restarted(world, validation_wait_seconds=60)
    world.reconcile(step=1)
    assert world.unschedulable("big") and not marked(world, "big")  # provisioning releases its own hold


def test_a_failed_command_lifts_its_cordon_and_mark() -> None:
    world = World(validation_wait_seconds=0, replacement_timeout_seconds=60)
    replacing_big(world)
    world.reconcile(step=61)
    assert not world.unschedulable("big") and not marked(world, "big")


def test_every_command_is_in_the_decision_log_with_its_prices_before_and_after() -> None:
    world = World(validation_wait_seconds=0)
    consolidating(world)
    world.node("big", "large")
    world.pod("a", "big", cpu="1.5")
    world.reconcile()
    (decision,) = world.controller.decisions.recent()
    assert (decision.controller, decision.action, decision.subject) == (
        "deprovisioning",
        "consolidation/replace",
        "node/big",
    )
    assert decision.reason.startswith("consolidation: replace, terminating 1 machines big/large")
    assert decision.price_before == pytest.approx(0.40)
    assert decision.price_before is not None and decision.price_after is not None
    assert decision.price_after < decision.price_before
    assert decision.extra["nodes"] == ["big"]
    assert decision.to_json()["price_before"] == pytest.approx(0.40)


def test_an_emptiness_delete_costs_nothing_after() -> None:
    world = World()
    world.kube.put(PROVISIONERS, make_provisioner(ttlSecondsAfterEmpty=5))
    world.node("n1")
    world.reconcile()
    world.reconcile(step=10)  # the TTL passed, and so did the poll period after the stamping pass
    (decision,) = world.controller.decisions.recent()
    assert (decision.action, decision.price_before, decision.price_after) == ("emptiness/delete", 0.20, 0)


def test_a_command_that_fails_is_in_the_decision_log_with_why() -> None:
    world = World(validation_wait_seconds=0, replacement_timeout_seconds=60)
    failures = ("karpenter_deprovisioning_replacement_machine_launch_failure_counter", "consolidation/replace")
    world.remember(failures[0], deprovisioner=failures[1])
    world.remember(SIMULATIONS)
    consolidating(world)
    world.node("big", "large")
    world.pod("a", "big", cpu="1.5")
    world.reconcile()
    world.reconcile(step=61)
    assert world.metric(failures[0], deprovisioner=failures[1]) == 1
    assert world.metric(SIMULATIONS) >= 1  # consolidation simulated the replacement
    failed, started = world.controller.decisions.recent()
    assert (started.action, failed.action) == ("consolidation/replace", "deprovisioning-failed")
    assert "never initialized" in failed.reason


def test_unconsolidatable_is_published_once_per_node_per_15_minutes_through_the_shared_recorder() -> None:
    world = World(validation_wait_seconds=0, poll_period_seconds=0, consolidated_reset_seconds=0)
    consolidating(world)
    world.node("n1")
    world.kube.patch(NODES, "n1", {"metadata": {"annotations": {L.DO_NOT_CONSOLIDATE: "true"}}})
    world.pod("a", "n1")

    def count() -> int:
        return sum(1 for e in world.kube.events if e["reason"] == "Unconsolidatable")

    world.reconcile()
    assert count() == 1
    world.reconcile(step=600)
    assert count() == 1
    world.reconcile(step=301)
    assert count() == 2


def test_a_pass_out_of_budget_is_continued_by_the_next_and_its_coverage_is_published() -> None:
    """Issue 21: with no time at all, each pass still simulates one candidate (or prefix) per
    method and the next continues after it (not after the poll period): repack consolidation's
    prefix sizes one a pass, then single-node consolidation's sweep; coverage and time are metrics
    and `last_pass` (the dashboard's overview)."""
    world = World(consolidation_budget_seconds=0.0)
    world.remember("karpenter_deprovisioning_consolidation_timeouts", consolidation_type="single-machine")
    consolidating(world)
    for i in range(3):  # pods pinned to their hosts: nothing to consolidate, three candidates to simulate
        world.node(f"n{i}")
        world.pod(f"p{i}", f"n{i}", cpu="1", nodeSelector={L.HOSTNAME: f"n{i}"})
    stopped = []
    for _ in range(20):
        world.reconcile(step=0.1)  # at once: an incomplete pass is not idle, no poll period
        covered = world.controller.last_pass["covered"]
        for method in (MULTI_NODE_CONSOLIDATION, REPACK_CONSOLIDATION, SINGLE_NODE_CONSOLIDATION):
            # the metric says what this pass covered: 0 for a method it did not reach, not the last figure
            found = REGISTRY.get_sample_value("karpy_deprovisioning_candidates_covered", {"method": method})
            assert (found or 0) == covered.get(method, 0)
        if world.controller.last_pass["complete"]:
            break
        stopped.append((world.controller.last_pass["stoppedIn"], covered))
    # repack's sizes 1 and 2 stop a pass each; size 3 is its last, so that pass goes on to
    # single-node, which simulates one candidate; the sweep over its three ends the third time
    assert [s for s, _ in stopped] == ["repackconsolidation", "repackconsolidation", "singlenodeconsolidation"] * 2 + [
        "repackconsolidation",
        "repackconsolidation",
    ]
    assert [c["repackconsolidation"] for _, c in stopped[:3]] == [1, 2, 3]
    assert [c["singlenodeconsolidation"] for s, c in stopped if s == "singlenodeconsolidation"] == [1, 1]
    last = world.controller.last_pass
    assert last["complete"] is True and last["eligible"] == 3 and last["covered"]["singlenodeconsolidation"] == 1
    assert REGISTRY.get_sample_value("karpy_deprovisioning_pass_complete") == 1
    assert world.metric("karpenter_deprovisioning_consolidation_timeouts", consolidation_type="single-machine") == 2
    assert (
        REGISTRY.get_sample_value("karpy_deprovisioning_candidates_covered", {"method": "singlenodeconsolidation"}) == 1
    )
    # the pass's thread's CPU time, beside its wall time (which also counts other processes' share)
    assert 0.0 < last["cpuSeconds"] <= last["seconds"] + 0.001
    assert REGISTRY.get_sample_value("karpy_deprovisioning_pass_cpu_seconds") == pytest.approx(
        last["cpuSeconds"], abs=1e-3
    )


def drifting_world(enabled: bool = True) -> tuple[World, str]:
    """Node n1 (a pod on it) made from AWSNodeTemplate `nodes`, which the cloud says it drifted from."""
    world = World(drift_enabled=enabled)
    world.kube.put(AWSNODETEMPLATES, make_awsnodetemplate("nodes"))
    world.kube.put(PROVISIONERS, make_provisioner(providerRef={"name": "nodes"}))
    world.node("n1", provider_id="fake:///zone-a/n1")
    world.pod("a", "n1", cpu="3")
    world.cloud.add(Instance("fake:///zone-a/n1", "n1", "medium", "zone-a", "on-demand", 0.2, "default", 0.0))
    world.cloud.drifted["fake:///zone-a/n1"] = Drift(DriftReason.AMI, "AMI ami-1 is no longer selected (now ami-2)")
    return world, "fake:///zone-a/n1"


def test_a_drifted_node_is_annotated_counted_logged_then_replaced() -> None:
    world, _ = drifting_world()
    labels = {"type": "AMIDrift", "provisioner": "default"}
    world.remember("karpenter_machines_drifted", **labels)
    world.remember("karpenter_machines_disrupted", type="drift", provisioner="default")
    world.remember("karpenter_deprovisioning_actions_performed", action="drift/replace", deprovisioner="drift")
    world.reconcile()
    assert world.kube.objects["nodes"]["n1"]["metadata"]["annotations"][L.VOLUNTARY_DISRUPTION] == "drifted"
    assert world.metric("karpenter_machines_drifted", **labels) == 1
    assert world.metric("karpenter_machines_disrupted", type="drift", provisioner="default") == 1
    (marked,) = [d for d in world.controller.decisions.recent() if d.action == "drifted"]
    why = {"reason": "AMIDrift", "message": "AMI ami-1 is no longer selected (now ami-2)"}
    assert marked.subject == "node/n1" and marked.extra == why
    outlook = world.controller.outlooks()["n1"]
    assert outlook.verdict == "drifted" and outlook.reason.startswith("drifted: AMI ami-1 is no longer selected")
    assert outlook.to_json()["drift"] == {
        "reason": "AMIDrift",
        "message": "AMI ami-1 is no longer selected (now ami-2)",
    }
    world.reconcile(step=9)
    assert not world.unschedulable("n1")  # the marking pass did nothing: the next is the poll period's
    world.reconcile(step=1)
    assert world.unschedulable("n1") and len(world.cloud.create_calls) == 1  # replacement first, n1 still there
    assert world.deleting() == []
    (replace,) = [d for d in world.controller.decisions.recent() if d.action == "drift/replace"]
    assert replace.extra["drift"] == {"n1": why}
    assert "n1: AMI ami-1 is no longer selected" in replace.reason
    assert (
        world.metric("karpenter_deprovisioning_actions_performed", action="drift/replace", deprovisioner="drift") == 1
    )


def test_with_drift_off_the_cloud_is_not_asked_and_nothing_is_marked() -> None:
    world, _ = drifting_world(enabled=False)
    world.reconcile()
    world.reconcile(step=20)
    assert world.cloud.drift_calls == []
    assert L.VOLUNTARY_DISRUPTION not in world.kube.objects["nodes"]["n1"]["metadata"].get("annotations", {})
    assert world.cloud.create_calls == [] and world.deleting() == []
    world.controller.set_drift_enabled(True)  # karpenter-global-settings switched it on
    world.reconcile(step=20)
    assert world.kube.objects["nodes"]["n1"]["metadata"]["annotations"][L.VOLUNTARY_DISRUPTION] == "drifted"
