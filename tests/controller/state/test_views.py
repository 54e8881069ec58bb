"""Kubernetes objects → cluster state's views (`controller/state/views.py`, `snapshot.py`).

The converters every controller reads through: what a Node, Pod, Provisioner and PDB become,
the one "initialized" rule, the scheduler's `StateNode`, and that a malformed object gives a
view that says so instead of raising.
"""

from __future__ import annotations

import dataclasses

import pytest

from controller.core import labels as L
from controller.core.taints import Taint
from controller.state.views import node_view, pdb_view, pod_view, provisioner_view
from tests.builders.wire import make_node, make_pdb, make_pod, make_provisioner


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
