"""Interruption: EventBridge events delivered to SQS (moto_server) → nodes deleted (spec §8.5)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.cloudprovider.aws.api import AWSApi, Boto3Transport
from controller.cloudprovider.aws.interruption import (
    NOOP,
    REBALANCE,
    SCHEDULED_CHANGE,
    SPOT_INTERRUPTION,
    STATE_CHANGE,
    InterruptionQueue,
    MessageError,
    parse_message,
)
from controller.cloudprovider.base import UnavailableOfferings
from controller.core import labels as L
from controller.decisions import DecisionLog
from controller.events import EventRecorder
from controller.interruption.controller import InterruptionController
from controller.kube.resources import NODES
from tests.builders.wire import make_node
from tests.fakes.world import World
from tests.support.moto import REGION, MotoServer

QUEUE = "karpy-interruption"


def ec2_event(kind: str, instance: str, **detail: Any) -> dict[str, Any]:
    return {"source": "aws.ec2", "detail-type": kind, "detail": {"instance-id": instance, **detail}}


HEALTH = {
    "source": "aws.health",
    "detail-type": "AWS Health Event",
    "detail": {"service": "EC2", "eventTypeCategory": "scheduledChange", "affectedEntities": [{"entityValue": "i-1"}]},
}
PARSED = [
    (
        "spot",
        ec2_event("EC2 Spot Instance Interruption Warning", "i-1", **{"instance-action": "terminate"}),
        SPOT_INTERRUPTION,
    ),
    ("health", HEALTH, SCHEDULED_CHANGE),
    ("stopping", ec2_event("EC2 Instance State-change Notification", "i-1", state="stopping"), STATE_CHANGE),
    ("terminated", ec2_event("EC2 Instance State-change Notification", "i-1", state="terminated"), STATE_CHANGE),
    ("running", ec2_event("EC2 Instance State-change Notification", "i-1", state="running"), NOOP),
    ("rebalance", ec2_event("EC2 Instance Rebalance Recommendation", "i-1"), REBALANCE),
]


@pytest.mark.parametrize(("case", "event", "kind"), PARSED, ids=[p[0] for p in PARSED])
def test_parse(case: str, event: dict[str, Any], kind: str) -> None:
    msg = parse_message(json.dumps(event))
    assert msg.kind == kind and msg.instance_ids == ("i-1",)


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        "{}",
        json.dumps({"source": "aws.s3", "detail": {}}),
        json.dumps(ec2_event("EC2 Something Else", "i-1")),
        json.dumps({"source": "aws.ec2", "detail-type": "x", "detail": {}}),
    ],
)
def test_malformed_messages_are_errors(body: str) -> None:
    with pytest.raises(MessageError):
        parse_message(body)


def aws_node(name: str, instance: str, zone: str = "us-east-1a") -> dict[str, Any]:
    node = make_node(name)
    node["spec"]["providerID"] = f"aws:///{zone}/{instance}"
    labels = node["metadata"].setdefault("labels", {})
    labels.update({L.PROVISIONER_NAME: "default", L.INSTANCE_TYPE: "m5.large", L.ZONE: zone, L.CAPACITY_TYPE: "spot"})
    return node


def test_eventbridge_to_sqs_events_drain_nodes_and_are_deleted(moto_server: MotoServer) -> None:
    sqs, events = moto_server.client("sqs"), moto_server.client("events")
    url = sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="karpy", EventPattern=json.dumps({"source": ["aws.ec2", "aws.health"]}))
    events.put_targets(Rule="karpy", Targets=[{"Id": "q", "Arn": arn}])

    def put(event: dict[str, Any]) -> None:
        entry = {"Source": event["source"], "DetailType": event["detail-type"], "Detail": json.dumps(event["detail"])}
        assert events.put_events(Entries=[entry])["FailedEntryCount"] == 0

    world = World.make()
    for name, instance in (("spot-node", "i-0aaa"), ("stopping-node", "i-0bbb"), ("calm-node", "i-0ccc")):
        world.put(NODES, aws_node(name, instance))
    world.sync()
    clock, kube, state = world.clock, world.kube, world.state
    unavailable = UnavailableOfferings(clock)
    api = AWSApi(Boto3Transport(REGION, moto_server.url))
    ctrl = InterruptionController(
        state,
        kube,
        InterruptionQueue(api, QUEUE, wait_seconds=1),
        EventRecorder(kube, clock),
        DecisionLog(clock),
        unavailable.mark,
    )
    put(ec2_event("EC2 Spot Instance Interruption Warning", "i-0aaa", **{"instance-action": "terminate"}))
    put(ec2_event("EC2 Instance State-change Notification", "i-0bbb", state="stopping"))
    put(ec2_event("EC2 Instance Rebalance Recommendation", "i-0ccc"))
    sqs.send_message(QueueUrl=url, MessageBody="garbage")
    deleted: list[str] = []
    for _ in range(5):
        deleted += ctrl.reconcile()
        if (
            int(
                sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"][
                    "ApproximateNumberOfMessages"
                ]
            )
            == 0
        ):
            break
    assert sorted(deleted) == ["spot-node", "stopping-node"]
    deleting = sorted(n["metadata"]["name"] for n in kube.items(NODES) if n["metadata"].get("deletionTimestamp"))
    assert deleting == ["spot-node", "stopping-node"]  # the termination finalizer drains them
    reasons = {e["reason"] for e in kube.events}
    assert {
        "InstanceSpotInterrupted",
        "InstanceStopping",
        "InstanceSpotRebalanceRecommendation",
        "NodeTerminatingOnInterruption",
    } <= reasons
    assert unavailable.is_unavailable("m5.large", "us-east-1a", "spot")
    left = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0, VisibilityTimeout=0)
    assert not left.get("Messages")  # handled and malformed messages alike are deleted
