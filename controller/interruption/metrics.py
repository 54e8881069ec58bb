"""Interruption metrics with Karpenter v0.31's names, types and labels (spec §9.1; Karpenter's
`pkg/controllers/interruption/metrics.go` in the AWS provider).

- `karpenter_interruption_received_messages{message_type}` (counter): every parsed message, by
  Karpenter's kind name (`SpotInterruptionKind`, `ScheduledChangeKind`, `StateChangeKind`,
  `RebalanceRecommendationKind`, `NoOpKind`); a malformed message is not counted;
- `karpenter_interruption_deleted_messages` (counter): every message deleted from the queue,
  malformed ones included;
- `karpenter_interruption_message_latency_time_seconds` (histogram, controller-runtime's buckets):
  the event's time → handled, for every message but a no-op;
- `karpenter_interruption_actions_performed{action_type}` (counter): per node of karpy's a
  message names, `CordonAndDrain` or `NoAction`.
A node deleted on interruption also counts in `karpenter_nodes_terminated{reason="interruption"}`
(`controller.metrics`).
"""

from __future__ import annotations

from prometheus_client import Histogram

from controller.cloudprovider.aws.interruption import NOOP, REBALANCE, SCHEDULED_CHANGE, SPOT_INTERRUPTION, STATE_CHANGE
from controller.metrics import DURATION_BUCKETS, KarpenterCounter

# karpy's message kinds → Karpenter's `messages.Kind` names, the `message_type` label's values.
MESSAGE_TYPES = {
    SPOT_INTERRUPTION: "SpotInterruptionKind",
    SCHEDULED_CHANGE: "ScheduledChangeKind",
    STATE_CHANGE: "StateChangeKind",
    REBALANCE: "RebalanceRecommendationKind",
    NOOP: "NoOpKind",
}
CORDON_AND_DRAIN = "CordonAndDrain"
NO_ACTION = "NoAction"

RECEIVED_MESSAGES = KarpenterCounter(
    "karpenter_interruption_received_messages",
    "Count of messages received from the SQS queue. Broken down by message type and whether the message was "
    "actionable.",
    ["message_type"],
)
DELETED_MESSAGES = KarpenterCounter(
    "karpenter_interruption_deleted_messages", "Count of messages deleted from the SQS queue."
)
MESSAGE_LATENCY = Histogram(
    "karpenter_interruption_message_latency_time_seconds",
    "Length of time between message creation in queue and an action taken on the message by the controller.",
    buckets=DURATION_BUCKETS,
)
ACTIONS_PERFORMED = KarpenterCounter(
    "karpenter_interruption_actions_performed", "Number of notification actions performed. Labeled by action",
    ["action_type"],
)  # fmt: skip
