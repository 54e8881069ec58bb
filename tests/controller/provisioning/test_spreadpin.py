"""Lifting karpy's topology gate (`controller/provisioning/spreadpin.py`)."""

from __future__ import annotations

from typing import Any

from controller.core.labels import TOPOLOGY_GATE
from controller.kube.resources import PODS
from controller.provisioning.spreadpin import Pinner, pin_for, ungate_patch
from controller.state.cluster import ClusterState
from controller.state.snapshot import PodView
from controller.state.views import pod_view
from tests.builders.wire import make_pod
from tests.fakes.kube import FakeKube
from tests.fakes.world import World

ZONE = "topology.kubernetes.io/zone"
SPREAD = {"topologySpreadConstraints": [
    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
     "labelSelector": {"matchLabels": {"app": "s"}}},
    {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
     "labelSelector": {"matchLabels": {"app": "s"}}}]}  # fmt: skip


def gated(*gates: str, **spec: Any) -> dict[str, Any]:
    pod = make_pod("s-1", labels={"app": "s"}, pending=False, **{**SPREAD, **spec})
    pod["spec"]["schedulingGates"] = [{"name": g} for g in gates]
    return pod


def setup(pod: dict[str, Any]) -> tuple[FakeKube, ClusterState, PodView]:
    world = World.make()
    stored = world.kube.put(PODS, pod)
    return world.kube, world.state, pod_view(stored)


def test_a_pod_gated_by_karpy_alone_is_pending_for_provisioning_and_others_wait() -> None:
    assert pod_view(gated(TOPOLOGY_GATE)).provisionable
    assert not pod_view(gated(TOPOLOGY_GATE, "example.com/quota")).provisionable
    assert not pod_view(gated("example.com/quota")).provisionable


def test_the_pin_fixes_only_the_gated_keys_and_needs_the_node_to_have_them() -> None:
    view = pod_view(gated(TOPOLOGY_GATE))
    labels = {ZONE: "us-west-2b", "kubernetes.io/hostname": "n1"}
    assert pin_for(view, labels) == {ZONE: "us-west-2b"}
    assert pin_for(view, {"kubernetes.io/hostname": "n1"}) is None
    patch = ungate_patch(view, {ZONE: "us-west-2b"})
    assert patch["spec"] == {"schedulingGates": None, "nodeSelector": {ZONE: "us-west-2b"}}
    assert patch["metadata"]["resourceVersion"] == view.obj["metadata"]["resourceVersion"]


def test_pinning_lifts_the_gate_and_adds_the_node_selector_in_one_write() -> None:
    kube, state, view = setup(gated(TOPOLOGY_GATE, nodeSelector={"team": "a"}))
    assert Pinner(kube, state).pin(view, {ZONE: "us-west-2c"})
    stored = kube.get(PODS, "s-1", "default")
    assert "schedulingGates" not in stored["spec"]
    assert stored["spec"]["nodeSelector"] == {"team": "a", ZONE: "us-west-2c"}
    assert not Pinner(kube, state).pin(pod_view(stored), {ZONE: "us-west-2a"}), "no gate left: nothing to pin"


def test_a_pod_changed_since_the_plan_is_not_pinned() -> None:
    kube, state, view = setup(gated(TOPOLOGY_GATE))
    changed = kube.get(PODS, "s-1", "default")
    changed["metadata"]["labels"]["x"] = "y"
    kube.put(PODS, changed)
    assert not Pinner(kube, state).pin(view, {ZONE: "us-west-2c"})
    assert kube.get(PODS, "s-1", "default")["spec"]["schedulingGates"] == [{"name": TOPOLOGY_GATE}]


def test_release_lifts_the_gate_without_a_pin() -> None:
    kube, state, view = setup(gated(TOPOLOGY_GATE))
    assert Pinner(kube, state).release(view)
    stored = kube.get(PODS, "s-1", "default")
    assert "schedulingGates" not in stored["spec"] and "nodeSelector" not in stored["spec"]
