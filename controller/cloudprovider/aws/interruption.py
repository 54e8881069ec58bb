"""EC2 interruption events delivered EventBridge → SQS (spec §8.5): parsing and the queue.

`parse_message(body)` (pure) turns one SQS message body into an `InterruptionMessage`:
- `aws.ec2` "EC2 Spot Instance Interruption Warning" → `spot-interruption` (cordon and drain);
- `aws.health` "AWS Health Event", service EC2, category scheduledChange → `scheduled-change`;
- `aws.ec2` "EC2 Instance State-change Notification", state stopping / stopped / shutting-down /
  terminated → `state-change` (other states: `noop`);
- `aws.ec2` "EC2 Instance Rebalance Recommendation" → `rebalance-recommendation` (an event only).
Anything else raises `MessageError` (the caller logs and deletes it). The event's `time` is kept
(`sent`, epoch seconds; None when absent) for the message latency metric. `InterruptionQueue` is the
queue through `AWSApi`: long-poll receive (10 messages, 20 s wait, 20 s visibility) and delete.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from controller.cloudprovider.aws.api import AWSApi
from controller.core.timestamps import parse_timestamp

SPOT_INTERRUPTION = "spot-interruption"
SCHEDULED_CHANGE = "scheduled-change"
STATE_CHANGE = "state-change"
REBALANCE = "rebalance-recommendation"
NOOP = "noop"
ACTIONABLE_STATES = frozenset({"stopping", "stopped", "shutting-down", "terminated"})


class MessageError(ValueError):
    """A message that is not a usable interruption event."""


@dataclass(frozen=True)
class InterruptionMessage:
    kind: str
    instance_ids: tuple[str, ...]
    state: str = ""  # for state changes
    receipt: str = ""
    sent: float | None = None  # the event's time

    @property
    def drains(self) -> bool:
        return self.kind in (SPOT_INTERRUPTION, SCHEDULED_CHANGE, STATE_CHANGE)


def parse_message(body: str) -> InterruptionMessage:
    try:
        event = json.loads(body)
    except json.JSONDecodeError as err:
        raise MessageError(f"not JSON: {err}") from err
    if not isinstance(event, Mapping) or not isinstance(event.get("detail"), Mapping):
        raise MessageError("not an EventBridge event (no detail)")
    msg = _parse_event(event)
    sent = event.get("time")
    return replace(msg, sent=parse_timestamp(sent if isinstance(sent, str) else None))


def _parse_event(event: Mapping[str, Any]) -> InterruptionMessage:
    source, kind, detail = event.get("source"), event.get("detail-type"), event["detail"]
    if source == "aws.health" and kind == "AWS Health Event":
        if detail.get("service") != "EC2" or detail.get("eventTypeCategory") != "scheduledChange":
            return InterruptionMessage(NOOP, ())
        ids = tuple(str(e.get("entityValue")) for e in detail.get("affectedEntities") or () if isinstance(e, Mapping))
        return InterruptionMessage(SCHEDULED_CHANGE, _ids(ids))
    if source != "aws.ec2":
        raise MessageError(f"unknown event source {source!r}")
    instance = detail.get("instance-id")
    if not isinstance(instance, str) or not instance:
        raise MessageError(f"{kind}: no instance-id")
    if kind == "EC2 Spot Instance Interruption Warning":
        return InterruptionMessage(SPOT_INTERRUPTION, (instance,))
    if kind == "EC2 Instance Rebalance Recommendation":
        return InterruptionMessage(REBALANCE, (instance,))
    if kind == "EC2 Instance State-change Notification":
        state = str(detail.get("state", ""))
        return InterruptionMessage(STATE_CHANGE if state in ACTIONABLE_STATES else NOOP, (instance,), state)
    raise MessageError(f"unknown event detail-type {kind!r}")


def _ids(ids: tuple[str, ...]) -> tuple[str, ...]:
    out = tuple(i for i in ids if i.startswith("i-"))
    if not out:
        raise MessageError("AWS Health Event: no affected instance")
    return out


class InterruptionQueue:
    """The SQS queue by name; `rename()` switches queues at run time (karpenter-global-settings'
    `aws.interruptionQueueName`), "" turns interruption handling off. A message is deleted from the
    queue it came from even if the name changed meanwhile."""

    def __init__(self, api: AWSApi, queue_name: str, wait_seconds: int = 20) -> None:
        self._api = api
        self.name = queue_name
        self._wait = wait_seconds
        self._url: str | None = None
        self._lock = threading.Lock()
        self._from: dict[str, tuple[str, str]] = {}  # receipt → (queue name, url)

    def rename(self, queue_name: str) -> None:
        with self._lock:
            if queue_name != self.name:
                self.name, self._url = queue_name, None

    def url(self) -> str:
        with self._lock:
            name, url = self.name, self._url
        if url is None:
            url = str(self._api.call("sqs", "get_queue_url", f"queue {name}", QueueName=name)["QueueUrl"])
            with self._lock:
                if self.name == name:
                    self._url = url
        return url

    def receive(self) -> list[dict[str, Any]]:
        name = self.name
        if not name:
            return []
        url = self.url()
        answer = self._api.call(
            "sqs",
            "receive_message",
            f"queue {name}",
            QueueUrl=url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=self._wait,
            VisibilityTimeout=20,
        )
        messages = list(answer.get("Messages") or [])
        with self._lock:
            for m in messages:
                self._from[str(m.get("ReceiptHandle", ""))] = (name, url)
        return messages

    def delete(self, receipt: str) -> None:
        with self._lock:
            name, url = self._from.pop(receipt, (self.name, self._url or ""))
        if not url:
            url = self.url()
        self._api.call("sqs", "delete_message", f"queue {name}", QueueUrl=url, ReceiptHandle=receipt)
