"""Kubernetes objects → cluster state's views (`controller/state/views.py`, `snapshot.py`).

The converters every controller reads through: what a Node, Pod, Provisioner and PDB become,
the one "initialized" rule, the scheduler's `StateNode`, and that a malformed object gives a
view that says so instead of raising.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

from controller.core import labels as L
from controller.core.taints import Taint
from controller.kube.resources import NODES, PDBS, PODS, PROVISIONERS
from controller.state.cluster import ClusterState
from controller.state.trim import kept
from controller.state.views import node_view, pdb_view, pod_view, pod_view_since, provisioner_view
from tests.builders.wire import make_node, make_pdb, make_pod, make_provisioner
from tests.fakes.world import state_of


def test_a_node_reads_its_capacity_taints_readiness_and_deletion() -> None:
    obj = make_node("n1", cpu="4", memory="16Gi", provider_id="fake:///z/n1", deleting=True)
    obj["spec"]["taints"] = [{"key": "dedicated", "value": "a", "effect": "NoSchedule"}]
    view = node_view(obj)
    assert (view.name, view.provider_id, view.key) == ("n1", "fake:///z/n1", "fake:///z/n1")
    assert view.capacity["cpu"] == 4000 and view.allocatable["memory"] == 16 * 2**30
    assert view.taints == (Taint("dedicated", "a", "NoSchedule"),)
    assert view.ready and view.deleting and view.owned and view.provisioner == "default"


INITIALIZED = {
    "karpy's node with the label": (dict(initialized=True), {}, True),
    "karpy's node, Ready but not labelled": (dict(initialized=False), {}, False),
    "someone else's node, Ready": (dict(provisioner=None), {}, True),
    "someone else's node, not Ready": (dict(provisioner=None, ready=False), {}, False),
    "someone else's node in flight": (dict(provisioner=None), dict(in_flight=True), False),
}


@pytest.mark.parametrize(("node", "state", "initialized"), INITIALIZED.values(), ids=INITIALIZED.keys())
def test_the_one_initialized_rule(node: dict[str, object], state: dict[str, bool], initialized: bool) -> None:
    view = dataclasses.replace(node_view(make_node("n1", **node)), **state)  # type: ignore[arg-type]
    assert view.initialized is initialized
    assert view.state_node().initialized is initialized


def test_the_scheduler_sees_the_pods_that_take_room() -> None:
    pods = [
        pod_view(make_pod("running", node="n1", phase="Running")),
        pod_view(make_pod("done", node="n1", phase="Succeeded")),
        pod_view({**make_pod("leaving", node="n1", phase="Running"),
                  "metadata": {**make_pod("leaving")["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z"}}),
    ]  # fmt: skip
    view = dataclasses.replace(node_view(make_node("n1")), pods=tuple(pods), marked_for_deletion=True)
    state = view.state_node()
    assert [p.name for p in state.pods] == ["running"]
    assert state.marked_for_deletion and state.labels[L.PROVISIONER_NAME] == "default"


def test_a_pending_pod_is_provisionable_and_a_daemonset_or_bound_one_is_not() -> None:
    assert pod_view(make_pod("a")).provisionable
    assert not pod_view(make_pod("b", owner_kind="DaemonSet")).provisionable
    assert not pod_view(make_pod("c", node="n1")).provisionable
    assert pod_view(make_pod("d", owner_kind="DaemonSet")).is_daemonset


def queued_pod(name: str = "q", **spec: Any) -> dict[str, Any]:
    """A pod kube-scheduler has not tried yet: unbound, no PodScheduled condition."""
    pod = make_pod(name, pending=False, **spec)
    assert not pod["status"].get("conditions")
    return pod


def test_a_pod_kube_scheduler_has_not_tried_yet_is_queued() -> None:
    assert pod_view(queued_pod()).queued
    assert pod_view(queued_pod(schedulerName="default-scheduler")).queued
    assert not pod_view(make_pod("marked")).queued  # marked Unschedulable: provisionable instead
    assert pod_view(make_pod("marked")).provisionable


@pytest.mark.parametrize(
    "change",
    [
        lambda p: p["spec"].update(nodeName="n1"),
        lambda p: p["spec"].update(schedulerName="my-scheduler"),
        lambda p: p["spec"].update(schedulingGates=[{"name": "example.com/wait"}]),
        lambda p: p["status"].update(conditions=[{"type": "PodScheduled", "status": "False", "reason": "Error"}]),
        lambda p: p["status"].update(phase="Succeeded"),
        lambda p: p["metadata"].update(deletionTimestamp="2024-01-01T00:00:01Z"),
        lambda p: p["metadata"].update(ownerReferences=[{"kind": "DaemonSet", "name": "ds", "controller": True}]),
        lambda p: p["metadata"].update(annotations={"kubernetes.io/config.mirror": "x"}),
    ],
    ids=["bound", "another-scheduler", "gated", "tried-and-failed", "terminal", "deleting", "daemonset", "mirror"],
)
def test_a_pod_kube_scheduler_will_not_try_or_already_tried_is_not_queued(change: Any) -> None:
    pod = queued_pod()
    change(pod)
    assert not pod_view(pod).queued


def test_a_spread_pinned_pod_is_provisionable_not_queued() -> None:
    spread = [{"topologyKey": L.ZONE, "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]  # fmt: skip
    view = pod_view(queued_pod(topologySpreadConstraints=spread, nodeSelector={L.ZONE: "zone-a"}))
    assert view.provisionable and not view.queued


def test_a_pod_remembers_when_kube_scheduler_marked_it_unschedulable() -> None:
    pod = make_pod("p")
    pod["status"]["conditions"][0]["lastTransitionTime"] = "2027-01-15T08:00:00Z"
    assert pod_view(pod).unschedulable_since == 1_800_000_000.0
    pod["status"]["conditions"][0]["lastTransitionTime"] = 12  # not a timestamp: unknown, still readable
    view = pod_view(pod)
    assert view.unschedulable and view.unschedulable_since == 0.0 and view.request is not None
    assert pod_view(make_pod("q", node="n1")).unschedulable_since == 0.0


def test_a_pod_that_cannot_be_read_has_no_request_instead_of_raising() -> None:
    view = pod_view(make_pod("bad", cpu="lots"))
    assert view.request is None and view.key == "default/bad"


def test_a_provisioner_that_fails_validation_carries_its_error() -> None:
    good = provisioner_view(make_provisioner("ok"))
    bad = provisioner_view(make_provisioner("bad", ttlSecondsAfterEmpty=30, consolidation={"enabled": True}))
    assert good.spec is not None and good.error == ""
    assert bad.spec is None and "spec.consolidation.enabled, spec.ttlSecondsAfterEmpty" in bad.error


def test_a_pdb_matches_pods_of_its_namespace_and_selector() -> None:
    pdb = pdb_view(make_pdb("web", {"app": "web"}, allowed=1))
    assert pdb.disruptions_allowed == 1
    assert pdb.matches(pod_view(make_pod("a", labels={"app": "web"})))
    assert not pdb.matches(pod_view(make_pod("b", labels={"app": "db"})))
    assert not pdb.matches(pod_view(make_pod("c", namespace="other", labels={"app": "web"})))


# One bad object never stops the loops (issue 14, item 1) ------------------------------------

DEPTH = 600  # deeper than Python's recursion limit allows a recursive walk (two frames a level)


def nested(depth: int = DEPTH) -> dict[str, Any]:
    doc: dict[str, Any] = {"leaf": True}
    for _ in range(depth):
        doc = {"x": doc}
    return doc


def synced_state() -> ClusterState:
    return state_of()


def test_deep_unknown_field_under_provider_or_status_does_not_break_the_snapshot() -> None:
    state = synced_state()
    deep_provider = make_provisioner("deep-provider", provider={"subnetSelector": {"a": "b"}, "unknown": nested()})
    deep_status = make_provisioner("deep-status")
    deep_status["status"] = {"unknown": nested()}
    state.replace(PROVISIONERS.name, [make_provisioner("good"), deep_provider, deep_status])
    state.replace(PODS.name, [make_pod("p")])
    state.replace(NODES.name, [make_node("n1")])
    snap = state.snapshot()
    assert snap.provisioners["good"].spec is not None
    assert snap.provisioners["deep-status"].spec is not None  # status plays no part in loading
    assert snap.provisioners["deep-provider"].name == "deep-provider"
    assert [p.name for p in snap.pending_pods()] == ["p"]
    assert "n1" in snap.nodes


def test_a_view_that_cannot_be_built_becomes_an_inert_view() -> None:
    bad_pod = make_pod("bad", node="n1")
    bad_pod["spec"]["containers"] = nested()
    bad_pod["metadata"]["labels"] = {"deep": nested()}
    view = pod_view(bad_pod)
    assert (view.key, view.node_name, view.request) == ("default/bad", "n1", None)
    assert not view.provisionable

    bad_node = make_node("n2")
    bad_node["spec"]["taints"] = [nested()]
    node = node_view(bad_node)
    assert node.name == "n2" and node.provider_id == "fake:///us-west-2a/n2"

    bad_pdb = make_pdb("pdb", {"app": "web"}, allowed=3)
    bad_pdb["status"]["disruptionsAllowed"] = "many"
    pdb = pdb_view(bad_pdb)
    assert pdb.disruptions_allowed == 0  # nothing we cannot read allows a disruption

    bad_prov = make_provisioner("p")
    bad_prov["spec"]["requirements"] = [nested()]
    assert provisioner_view(bad_prov).error


def test_one_unreadable_object_of_each_kind_leaves_the_others_usable() -> None:
    state = synced_state()
    bad_pod = make_pod("bad")
    bad_pod["status"]["conditions"] = [nested()]
    bad_node = make_node("bad-node")
    bad_node["status"]["conditions"] = nested()
    bad_pdb = make_pdb("bad-pdb", {"app": "web"})
    bad_pdb["spec"]["selector"] = nested()
    state.replace(PODS.name, [make_pod("ok"), bad_pod])
    state.replace(NODES.name, [make_node("n1"), bad_node])
    state.replace(PDBS.name, [make_pdb("pdb", {"app": "web"}, allowed=1), bad_pdb])
    snap = state.snapshot()
    assert [p.name for p in snap.pending_pods()] == ["ok"]
    assert set(snap.nodes) == {"n1", "bad-node"}
    assert [p.name for p in snap.pdbs] == ["pdb", "bad-pdb"]


def test_a_status_the_crd_accepts_does_not_make_the_provisioner_unusable() -> None:
    # issue 14, item 6: a condition without a type or `cpu: lots` in status made the controller
    # ignore the Provisioner forever; status is never part of loading
    prov = make_provisioner("p")
    prov["status"] = {"conditions": [{"status": "True"}], "resources": {"cpu": "lots", "memory": "1Gi"}}
    view = provisioner_view(prov)
    assert view.error == "" and view.spec is not None
    assert view.status_resources == {"memory": 2**30}  # the readable entries are kept


def test_a_pod_view_derives_what_every_pass_reads_when_made_and_again_when_replaced() -> None:
    view = pod_view(make_pod("web-1", namespace="shop"))
    assert (view.key, view.provisionable, view.queued) == ("shop/web-1", True, False)
    bound = dataclasses.replace(view, node_name="node-a", unschedulable=False)  # a recorded binding
    assert (bound.key, bound.provisionable, bound.queued) == ("shop/web-1", False, False)
    fresh = dataclasses.replace(view, unschedulable=False, scheduler_tried=False)  # not tried yet
    assert (fresh.provisionable, fresh.queued) == (False, True)
    assert not hasattr(view, "__dict__")  # slotted: no per-view dict (issue 21)


def _fields(view: object) -> dict[str, object]:
    assert dataclasses.is_dataclass(view)
    return {f.name: getattr(view, f.name) for f in dataclasses.fields(view) if f.name not in ("request", "obj")}


def _status_update(pod: Mapping[str, Any], version: str) -> dict[str, Any]:
    """The pod as a status-only watch event sends it: the same spec, another resourceVersion and status."""
    return {**pod, "metadata": {**pod["metadata"], "resourceVersion": version}, "status": {"phase": "Running"}}


def test_a_status_update_keeps_the_pods_request_and_a_spec_change_reads_it_again() -> None:
    pod = kept(PODS.name, make_pod("web-1", cpu="250m"))
    before = pod_view(pod)
    running = kept(PODS.name, _status_update(pod, "2"), pod)
    after = pod_view_since(running, before)
    assert after.request is before.request and after.labels is before.labels
    assert _fields(after) == _fields(pod_view(running))  # the view a fresh read gives, request aside
    assert after.phase == "Running" and not after.provisionable
    bound = kept(PODS.name, {**running, "spec": {**running["spec"], "nodeName": "n1"}}, running)
    again = pod_view_since(bound, after)
    assert again.request is not None and again.request is not before.request
    assert again.request.node_name == "n1" and again.node_name == "n1"


def test_a_pod_whose_spec_cannot_be_read_is_read_again_on_every_update() -> None:
    bad = kept(PODS.name, make_pod("web-1", cpu="lots"))
    before = pod_view(bad)
    assert before.request is None
    assert pod_view_since(kept(PODS.name, _status_update(bad, "2"), bad), before).request is None


def test_cluster_state_keeps_a_pods_request_through_its_status_updates() -> None:
    state = state_of({PODS.name: [make_pod("web-1")]})
    first = state.snapshot().pods["default/web-1"]
    held = first.obj
    state.apply(PODS.name, "MODIFIED", _status_update(dict(held), "7"))
    second = state.snapshot().pods["default/web-1"]
    assert second.obj["spec"] is held["spec"] and second.request is first.request


def test_a_nodes_movable_pods_are_found_once_per_view_and_afresh_for_the_next() -> None:
    running, done = pod_view(make_pod("running", node="n1", phase="Running")), pod_view(make_pod("done", node="n1"))
    view = dataclasses.replace(node_view(make_node("n1")), pods=(running,))
    assert view.movable_pods() is view.movable_pods() and [p.name for p in view.movable_pods()] == ["running"]
    after = dataclasses.replace(view, pods=(running, done))  # the node's next view: a pod more
    assert [p.name for p in after.movable_pods()] == ["running", "done"]
