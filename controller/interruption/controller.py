"""`InterruptionController` (`interruption`): EC2 interruption events → nodes drained (spec §8.5).

`reconcile()` long-polls the queue (`InterruptionQueue`: 10 messages, 20 s) and handles each:
a spot interruption warning, a scheduled change, or a state change to stopping / stopped /
shutting-down / terminated deletes the karpy Node of that instance (the normal termination path
cordons and drains it; its pods, on a node being deleted, are provisioned for again at once, so
the replacement is launched while the node drains), with a `NodeTerminatingOnInterruption`
event and `karpenter_nodes_terminated{reason="interruption"}`; a spot interruption also marks
its (type, zone, spot) offering unavailable. A rebalance recommendation is an event only. Every
message is deleted once handled; a malformed one is logged and deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from controller.cloudprovider.aws.interruption import (
    REBALANCE,
    SPOT_INTERRUPTION,
    InterruptionMessage,
    InterruptionQueue,
    MessageError,
    parse_message,
)
from controller.cloudprovider.errors import CloudProviderError
from controller.core import labels as L
from controller.decisions import TERMINATED, Decision, DecisionLog
from controller.events import NORMAL, WARNING, Event, EventRecorder, ObjectRef
from controller.kube.client import Kube
from controller.kube.errors import KubeError, NotFoundError
from controller.kube.resources import NODES
from controller.metrics import NODES_TERMINATED
from controller.state.cluster import ClusterState
from controller.state.snapshot import NodeView

log = logging.getLogger(__name__)

REASONS = {
    SPOT_INTERRUPTION: ("InstanceSpotInterrupted", "Spot interruption warning was triggered"),
    "scheduled-change": ("InstanceUnhealthy", "An unhealthy warning was triggered for the instance"),
    REBALANCE: ("InstanceSpotRebalanceRecommendation", "Spot rebalance recommendation was triggered"),
}


class InterruptionController:
    name = "interruption"

    def __init__(
        self,
        state: ClusterState,
        kube: Kube,
        queue: InterruptionQueue,
        recorder: EventRecorder,
        decisions: DecisionLog,
        mark_unavailable: Callable[[str, str, str], None] | None = None,
    ) -> None:
        self.state, self.kube, self.queue = state, kube, queue
        self.recorder, self.decisions = recorder, decisions
        self._mark = mark_unavailable

    def reconcile(self) -> list[str]:
        """Handle one batch of messages; returns the nodes deleted."""
        if not self.state.synced():
            return []
        try:
            messages = self.queue.receive()
        except CloudProviderError as err:
            log.warning("receiving interruption messages: %s", err)
            return []
        deleted: list[str] = []
        for raw in messages:
            receipt = str(raw.get("ReceiptHandle", ""))
            try:
                msg = parse_message(str(raw.get("Body", "")))
            except MessageError as err:
                log.warning("deleting malformed interruption message %s: %s", raw.get("MessageId", "?"), err)
            else:
                deleted += self._handle(msg)
            try:
                self.queue.delete(receipt)
            except CloudProviderError as err:  # seen again after the visibility timeout
                log.warning("deleting interruption message: %s", err)
        return deleted

    def _handle(self, msg: InterruptionMessage) -> list[str]:
        snap = self.state.snapshot()
        out = []
        for instance_id in msg.instance_ids:
            node = _node_of(snap.nodes.values(), instance_id)
            if node is None:
                continue
            reason, text = REASONS.get(msg.kind, ("", ""))
            if msg.kind == "state-change":
                reason = "InstanceTerminating" if msg.state in ("shutting-down", "terminated") else "InstanceStopping"
                text = f"Instance is {msg.state}"
            self.recorder.publish(Event(_ref(node), WARNING if msg.drains else NORMAL, reason, text))
            if msg.kind == SPOT_INTERRUPTION and self._mark is not None:
                itype, zone = node.labels.get(L.INSTANCE_TYPE), node.labels.get(L.ZONE)
                if itype and zone:
                    self._mark(itype, zone, L.CAPACITY_TYPE_SPOT)
            if not msg.drains or node.deleting:
                continue
            try:
                self.kube.delete(NODES, node.name)
            except NotFoundError:
                continue
            except KubeError as err:
                log.warning("deleting interrupted node %s: %s", node.name, err)
                continue
            self.recorder.publish(
                Event(_ref(node), WARNING, "NodeTerminatingOnInterruption", "Node is terminating due to interruption")
            )
            NODES_TERMINATED.labels(reason="interruption", provisioner=node.labels.get(L.PROVISIONER_NAME, "")).inc()
            self.decisions.record(Decision(self.name, TERMINATED, f"node/{node.name}", f"{msg.kind} of {instance_id}"))
            log.info("node %s: %s of %s, draining", node.name, msg.kind, instance_id)
            out.append(node.name)
        return out


def _node_of(nodes: Any, instance_id: str) -> NodeView | None:
    for node in nodes:
        if node.owned and node.provider_id.startswith("aws:///") and node.provider_id.endswith("/" + instance_id):
            return node  # type: ignore[no-any-return]
    return None


def _ref(node: NodeView) -> ObjectRef:
    return ObjectRef("Node", node.name, "", str((node.obj.get("metadata") or {}).get("uid", "")))
