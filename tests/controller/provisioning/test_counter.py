"""The counter keeps each Provisioner's status: resources, node count and the Ready condition."""

from __future__ import annotations

from typing import Any

from controller.clock import FakeClock
from controller.kube.resources import AWSNODETEMPLATES, NODES, PROVISIONERS
from controller.provisioning.counter import CounterController, status_patches
from controller.state.cluster import ClusterState
from controller.state.snapshot import Snapshot
from tests.builders.wire import make_awsnodetemplate, make_node, make_provisioner
from tests.fakes.kube import FakeKube
from tests.fakes.world import sync_from


def snapshot(*objs: tuple[Any, dict[str, Any]], now: float = 1_800_000_000.0) -> Snapshot:
    clock = FakeClock(now)
    kube = FakeKube(clock)
    for kind, obj in objs:
        kube.put(kind, obj)
    return sync_from(ClusterState(clock), kube).snapshot()


def test_resources_nodes_and_ready_are_reported_once() -> None:
    prov = make_provisioner("p")
    nodes = [make_node("n1", provisioner="p", cpu="4"), make_node("n2", provisioner="p", cpu="2"),
             make_node("x", provisioner="other")]  # fmt: skip
    snap = snapshot((PROVISIONERS, prov), *[(NODES, n) for n in nodes])
    status = status_patches(snap)["p"]["status"]
    assert status["resources"]["cpu"] == "6"
    assert status["nodes"] == 2
    (ready,) = status["conditions"]
    assert ready["type"] == "Ready" and ready["status"] == "True"
    assert ready["lastTransitionTime"] == "2027-01-15T08:00:00Z"
    prov["status"] = status  # as the apiserver now has it: nothing more to patch
    assert "p" not in status_patches(snapshot((PROVISIONERS, prov), *[(NODES, n) for n in nodes]))


def test_a_missing_node_template_makes_it_not_ready_naming_the_template_and_recovers() -> None:
    prov = make_provisioner("p", providerRef={"name": "gone"})
    status = status_patches(snapshot((PROVISIONERS, prov)))["p"]["status"]
    (ready,) = status["conditions"]
    assert (ready["status"], ready["reason"]) == ("False", "NodeTemplateNotFound")
    assert "'gone'" in ready["message"]
    prov["status"] = status
    again = status_patches(snapshot((PROVISIONERS, prov), (AWSNODETEMPLATES, make_awsnodetemplate("gone")),
                                    now=1_800_000_600.0))["p"]["status"]  # fmt: skip
    (ready,) = again["conditions"]
    assert ready["status"] == "True" and ready["lastTransitionTime"] == "2027-01-15T08:10:00Z"


def test_the_providers_default_template_must_exist_when_none_is_named() -> None:
    snap = snapshot((PROVISIONERS, make_provisioner("p")))
    (ready,) = status_patches(snap, default_template="default")["p"]["status"]["conditions"]
    assert ready["reason"] == "NodeTemplateNotFound"
    (ready,) = status_patches(snap)["p"]["status"]["conditions"]  # the simulated provider needs none
    assert ready["status"] == "True"


def test_an_unreadable_spec_is_not_ready_and_other_conditions_and_the_transition_time_are_kept() -> None:
    prov = make_provisioner("p", limits={"resources": {"cpu": "lots"}})
    was = {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    prov["status"] = {"conditions": [{"type": "Other", "status": "True"}, "garbage", was]}
    status = status_patches(snapshot((PROVISIONERS, prov)))["p"]["status"]
    other, ready = status["conditions"]
    assert other == {"type": "Other", "status": "True"}
    assert (ready["status"], ready["reason"]) == ("False", "InvalidSpec")
    assert ready["lastTransitionTime"] == "2026-01-01T00:00:00Z" and "cpu" in ready["message"]


def test_the_controller_patches_the_status_subresource() -> None:
    clock = FakeClock(1_800_000_000.0)
    kube = FakeKube(clock)
    kube.put(PROVISIONERS, make_provisioner("p"))
    kube.put(NODES, make_node("n1", provisioner="p"))
    state = sync_from(ClusterState(clock), kube)
    assert CounterController(state, kube).reconcile() == ["p"]
    status = kube.get(PROVISIONERS, "p")["status"]
    assert status["nodes"] == 1 and status["conditions"][0]["status"] == "True"
