"""Karpenter's interruption metrics, counted as Karpenter counts them (received by kind, deleted,
latency from the event's time, actions per node of karpy's)."""

from __future__ import annotations

from typing import Any

from prometheus_client import REGISTRY

from controller.core.timestamps import format_timestamp
from controller.exposition import exposition
from controller.interruption.controller import InterruptionController
from controller.kube.resources import NODES
from tests.controller.interruption.test_controller import HEALTH, aws_node, ec2_event
from tests.controller.interruption.test_replacement import Queue
from tests.fakes.world import World

RECEIVED = "karpenter_interruption_received_messages"
DELETED = "karpenter_interruption_deleted_messages"
ACTIONS = "karpenter_interruption_actions_performed"
LATENCY = "karpenter_interruption_message_latency_time_seconds"
TERMINATED = "karpenter_machines_terminated"
SERIES = [
    (RECEIVED, {"message_type": kind})
    for kind in ("SpotInterruptionKind", "RebalanceRecommendationKind", "NoOpKind", "ScheduledChangeKind")
] + [(DELETED, {}), (ACTIONS, {"action_type": "CordonAndDrain"}), (ACTIONS, {"action_type": "NoAction"}),
     (LATENCY + "_count", {}), (LATENCY + "_sum", {}),
     (TERMINATED, {"provisioner": "default", "reason": "interruption"})]  # fmt: skip


def values() -> dict[str, float]:
    return {
        f"{name}{sorted(labels.items())}": REGISTRY.get_sample_value(name, labels) or 0.0 for name, labels in SERIES
    }


def sent(event: dict[str, Any], at: float) -> dict[str, Any]:
    return {**event, "time": format_timestamp(at)}


def test_every_message_counted_by_kind_deleted_and_timed_and_every_node_action() -> None:
    world, queue = World.make(), Queue()
    world.put(NODES, aws_node("spot-node", "i-0aaa"), aws_node("calm-node", "i-0ccc"))
    ctrl = InterruptionController(world.state, world.kube, queue, world.recorder, world.decisions)  # type: ignore[arg-type]
    world.sync()
    before, now = values(), world.clock.now()
    spot = ec2_event("EC2 Spot Instance Interruption Warning", "i-0aaa", **{"instance-action": "terminate"})
    queue.put(sent(spot, now - 3))
    queue.put(sent(ec2_event("EC2 Instance Rebalance Recommendation", "i-0ccc"), now - 1))
    queue.put(sent(ec2_event("EC2 Instance State-change Notification", "i-0aaa", state="running"), now - 1))
    queue.put(
        {
            **HEALTH,
            "detail": {
                "service": "EC2",
                "eventTypeCategory": "scheduledChange",
                "affectedEntities": [{"entityValue": "i-0zzz"}],
            },
        }
    )  # no time; no node of ours
    queue.messages.append({"MessageId": "bad", "ReceiptHandle": "r", "Body": "garbage"})
    ctrl.reconcile()
    after = values()
    delta = {k: after[k] - before[k] for k in after}
    assert delta == {
        f"{RECEIVED}[('message_type', 'SpotInterruptionKind')]": 1.0,
        f"{RECEIVED}[('message_type', 'RebalanceRecommendationKind')]": 1.0,
        f"{RECEIVED}[('message_type', 'NoOpKind')]": 1.0,
        f"{RECEIVED}[('message_type', 'ScheduledChangeKind')]": 1.0,  # no node of karpy's: no action
        f"{DELETED}[]": 5.0,  # the malformed one too, uncounted as received
        f"{ACTIONS}[('action_type', 'CordonAndDrain')]": 1.0,
        f"{ACTIONS}[('action_type', 'NoAction')]": 1.0,
        f"{LATENCY}_count[]": 2.0,  # the spot warning and the rebalance (the no-op and the untimed are not)
        f"{LATENCY}_sum[]": 4.0,
        f"{TERMINATED}[('provisioner', 'default'), ('reason', 'interruption')]": 1.0,  # nothing to move: at once
    }
    assert all(e["reason"] for e in world.kube.events)  # the no-op published nothing


def test_exposed_as_karpenters_counters_and_histogram() -> None:
    test_every_message_counted_by_kind_deleted_and_timed_and_every_node_action()
    text = exposition().decode()
    assert f"# TYPE {RECEIVED} counter\n" in text and f'{RECEIVED}{{message_type="SpotInterruptionKind"}} ' in text
    assert f"# TYPE {DELETED} counter\n" in text and f"\n{DELETED} " in text
    assert f'{ACTIONS}{{action_type="CordonAndDrain"}} ' in text
    assert f"# TYPE {LATENCY} histogram\n" in text and f'{LATENCY}_bucket{{le="5.0"}} ' in text
    assert "_total" not in "".join(line for line in text.splitlines() if line.startswith("karpenter_interruption"))
