"""Spot interruption launches the replacement first: the node is drained once its pods have room."""

from __future__ import annotations

import json
from typing import Any

from controller.interruption.controller import InterruptionController, Replacements
from controller.interruption.replacement import replacement_missing
from controller.kube.resources import NODES, PODS
from controller.state.schedulinginput import provisionable
from tests.builders.wire import make_node, make_pod
from tests.controller.interruption.test_controller import aws_node, ec2_event
from tests.fakes.kube import FakeKube
from tests.fakes.world import World


class Queue:
    """The queue's two calls, holding what a test puts."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def put(self, event: dict[str, Any]) -> None:
        self.messages.append({"MessageId": str(len(self.messages)), "ReceiptHandle": "r", "Body": json.dumps(event)})

    def receive(self) -> list[dict[str, Any]]:
        out, self.messages = self.messages, []
        return out

    def delete(self, receipt: str) -> None:
        pass


def setup() -> tuple[World, Queue, InterruptionController]:
    world, queue = World.make(), Queue()
    world.put(NODES, aws_node("spot-node", "i-0aaa"))
    world.put(PODS, *(make_pod(f"web-{i}", cpu="1", memory="1Gi", node="spot-node") for i in range(3)))
    ctrl = InterruptionController(world.state, world.kube, queue, world.recorder, world.decisions)  # type: ignore[arg-type]
    world.sync()
    return world, queue, ctrl


def deleting(kube: FakeKube) -> list[str]:
    return sorted(n["metadata"]["name"] for n in kube.items(NODES) if n["metadata"].get("deletionTimestamp"))


def test_the_node_is_cordoned_and_its_pods_provisioned_for_before_it_is_drained() -> None:
    world, queue, ctrl = setup()
    clock, kube, state = world.clock, world.kube, world.state
    queue.put(ec2_event("EC2 Spot Instance Interruption Warning", "i-0aaa", **{"instance-action": "terminate"}))
    assert ctrl.reconcile() == []
    world.sync()
    assert deleting(kube) == [] and kube.get(NODES, "spot-node")["spec"]["unschedulable"] is True
    snap = state.snapshot()
    # provisioning now launches capacity for its pods (they still run where they are)
    assert sorted(p.key for p in provisionable(snap).rescheduled) == ["default/web-0", "default/web-1", "default/web-2"]
    assert "no room yet" in replacement_missing(snap, "spot-node")
    jobs = Replacements(ctrl)
    clock.step(10)
    assert jobs.reconcile() == []
    kube.put(NODES, make_node("small", cpu="2", memory="8Gi"))  # room for one pod only
    world.sync()
    assert jobs.reconcile() == [] and deleting(kube) == []
    kube.put(NODES, make_node("replacement", cpu="4", memory="16Gi", initialized=False))  # launched, not ready
    world.sync()
    assert jobs.reconcile() == []
    kube.put(NODES, make_node("replacement", cpu="4", memory="16Gi"))  # initialized
    world.sync()
    assert jobs.reconcile() == ["spot-node"] and deleting(kube) == ["spot-node"]
    assert any(e["reason"] == "NodeTerminatingOnInterruption" for e in kube.events)
    world.sync()
    assert jobs.reconcile() == []  # drained once
    assert sum(e["reason"] == "NodeTerminatingOnInterruption" for e in kube.events) == 1


def test_without_room_the_node_is_drained_90s_after_the_warning_and_a_repeat_warning_changes_nothing() -> None:
    world, queue, ctrl = setup()
    clock = world.clock
    warning = ec2_event("EC2 Spot Instance Interruption Warning", "i-0aaa", **{"instance-action": "terminate"})
    queue.put(warning)
    ctrl.reconcile()
    clock.step(60)
    queue.put(warning)
    world.sync()
    assert ctrl.reconcile() == []
    clock.step(29)
    assert ctrl.settle() == []
    clock.step(1)
    assert ctrl.settle() == ["spot-node"]


def test_other_interruptions_drain_at_once_and_a_node_deleted_meanwhile_is_forgotten() -> None:
    world, queue, ctrl = setup()
    kube = world.kube
    queue.put(ec2_event("EC2 Spot Instance Interruption Warning", "i-0aaa", **{"instance-action": "terminate"}))
    ctrl.reconcile()
    kube.delete(NODES, "spot-node")  # e.g. `kubectl delete node` meanwhile
    world.sync()
    assert ctrl.settle() == []
    assert not any(e["reason"] == "NodeTerminatingOnInterruption" for e in kube.events)  # termination owns it now
    kube.put(NODES, aws_node("stopping", "i-0bbb"))
    world.sync()
    queue.put(ec2_event("EC2 Instance State-change Notification", "i-0bbb", state="stopping"))
    assert ctrl.reconcile() == ["stopping"]


def test_an_instance_karpy_did_not_launch_is_left_to_its_owner() -> None:
    """Beside Karpenter: its node carries the same labels, but its instance lacks karpy's
    ownership tag, so neither a stop nor a spot warning makes karpy touch it."""
    world, queue = World.make(), Queue()
    world.put(NODES, aws_node("karpys", "i-0aaa"), aws_node("karpenters", "i-0kkk"))
    asked: list[str] = []

    def owns(provider_id: str) -> bool:
        asked.append(provider_id)
        return not provider_id.endswith("/i-0kkk")

    ctrl = InterruptionController(
        world.state,
        world.kube,
        queue,  # type: ignore[arg-type]
        world.recorder,
        world.decisions,
        owns=owns,
    )
    world.sync()
    queue.put(ec2_event("EC2 Instance State-change Notification", "i-0kkk", state="stopping"))
    queue.put(ec2_event("EC2 Spot Instance Interruption Warning", "i-0kkk", **{"instance-action": "terminate"}))
    queue.put(ec2_event("EC2 Instance State-change Notification", "i-0aaa", state="stopping"))
    assert ctrl.reconcile() == ["karpys"]
    world.expect_deleting("karpys")
    node = next(n for n in world.kube.items(NODES) if n["metadata"]["name"] == "karpenters")
    assert not node["spec"].get("unschedulable")  # not even cordoned
    assert "aws:///us-east-1a/i-0kkk" in asked
