"""`InterruptionController` (`interruption`): EC2 interruption events → nodes drained (spec §8.5).

`reconcile()` long-polls the queue (`InterruptionQueue`: 10 messages, 20 s) and handles each:
- a scheduled change, or a state change to stopping / stopped / shutting-down / terminated,
  deletes the karpy Node of that instance at once (the normal termination path cordons and
  drains it; its pods, on a node being deleted, are provisioned for again);
- a spot interruption warning marks the (type, zone, spot) offering unavailable and **launches
  the replacement first** (issue 10): the node is cordoned and marked for deletion, so
  provisioning launches capacity for its pods right away, and it is deleted — drained — once
  that capacity is initialized (`replacement.py`), or `replacement_wait` (90 s) after the
  warning at the latest, leaving 30 s of EC2's two-minute notice to drain. `settle()` (job
  `interruption.replacements`, every second) decides; a node with nothing to move goes at once.
  The wait lives in this controller's memory: after a failover the cordoned node stays until
  EC2 reclaims it and garbage collection removes it.
Only karpy's instances are handled: `owns(provider_id)` (the AWS provider's `has_seen`, which
requires karpy's ownership tag) must confirm the node's instance, so an event for an instance
Karpenter launched (its Node carries the same labels during a migration) is left to Karpenter.
Deletion comes with a `NodeTerminatingOnInterruption` event and
`karpenter_nodes_terminated{reason="interruption"}`. A rebalance recommendation is an event
only; a no-op (another state change, another health event) does nothing. Every message is
deleted once handled; a malformed one is logged and deleted. Karpenter's interruption metrics
(received, deleted, latency, actions) are counted as Karpenter counts them (`metrics.py`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller.cloudprovider.aws.interruption import (
    NOOP,
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
from controller.interruption import metrics as M
from controller.interruption.replacement import replacement_missing
from controller.kube.client import Kube
from controller.kube.errors import KubeError, NotFoundError
from controller.kube.resources import NODES
from controller.metrics import MACHINES_TERMINATED, NODES_TERMINATED
from controller.state.cluster import ClusterState
from controller.state.snapshot import NodeView

log = logging.getLogger(__name__)

REASONS = {
    SPOT_INTERRUPTION: ("InstanceSpotInterrupted", "Spot interruption warning was triggered"),
    "scheduled-change": ("InstanceUnhealthy", "An unhealthy warning was triggered for the instance"),
    REBALANCE: ("InstanceSpotRebalanceRecommendation", "Spot rebalance recommendation was triggered"),
}


REPLACEMENT_WAIT_SECONDS = 90.0


@dataclass(frozen=True)
class Waiting:
    """A spot node whose replacement is being launched before it is drained."""

    instance_id: str
    since: float
    reason: str = ""  # the last "why not yet", logged when it changes


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
        replacement_wait: float = REPLACEMENT_WAIT_SECONDS,
        owns: Callable[[str], bool] | None = None,
    ) -> None:
        self.state, self.kube, self.queue = state, kube, queue
        self._owns = owns
        self.recorder, self.decisions = recorder, decisions
        self._mark = mark_unavailable
        self.replacement_wait = replacement_wait
        self._waiting: dict[str, Waiting] = {}
        self._lock = threading.Lock()  # reconcile and settle run in different jobs

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
            else:
                M.DELETED_MESSAGES.inc()
        return deleted + self.settle()

    def settle(self) -> list[str]:
        """Drain the waiting spot nodes whose replacement has arrived or whose wait is over."""
        if not self.state.synced():
            return []
        snap = self.state.snapshot()
        deleted = []
        with self._lock:
            waiting = dict(self._waiting)
        for name, wait in sorted(waiting.items()):
            node = snap.nodes.get(name)
            if node is None or node.deleting:
                self._forget(name)
                continue
            missing = replacement_missing(snap, name)
            waited = snap.now - wait.since
            if missing and waited < self.replacement_wait:
                if missing != wait.reason:
                    log.info("node %s: waiting for its replacement (%s)", name, missing)
                    with self._lock:
                        self._waiting[name] = Waiting(wait.instance_id, wait.since, missing)
                continue
            why = f"replacement ready after {waited:.0f}s" if not missing else f"{waited:.0f}s passed, {missing}"
            if self._delete(node, SPOT_INTERRUPTION, wait.instance_id, why):
                deleted.append(name)
            self._forget(name)
        return deleted

    def _forget(self, name: str) -> None:
        with self._lock:
            self._waiting.pop(name, None)
        self.state.unmark_for_deletion([name])

    def _handle(self, msg: InterruptionMessage) -> list[str]:
        M.RECEIVED_MESSAGES.labels(message_type=M.MESSAGE_TYPES.get(msg.kind, msg.kind)).inc()
        if msg.kind == NOOP:
            return []
        snap = self.state.snapshot()
        out = []
        for instance_id in msg.instance_ids:
            node = _node_of(snap.nodes.values(), instance_id)
            if node is None or not self._is_ours(node):
                continue
            M.ACTIONS_PERFORMED.labels(action_type=M.CORDON_AND_DRAIN if msg.drains else M.NO_ACTION).inc()
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
            if msg.kind == SPOT_INTERRUPTION:
                self._replace_first(node, instance_id, snap.now)
            elif self._delete(node, msg.kind, instance_id, f"{msg.kind} of {instance_id}"):
                out.append(node.name)
        if msg.sent is not None:
            M.MESSAGE_LATENCY.observe(max(0.0, snap.now - msg.sent))
        return out

    def _is_ours(self, node: NodeView) -> bool:
        if self._owns is None:
            return True
        try:
            mine = self._owns(node.provider_id)
        except CloudProviderError as err:
            log.warning("checking the owner of node %s's instance: %s", node.name, err)
            return False
        if not mine:
            log.info("node %s: its instance was not launched by karpy, leaving its interruption alone", node.name)
        return mine

    def _replace_first(self, node: NodeView, instance_id: str, now: float) -> None:
        with self._lock:
            if node.name in self._waiting:
                return
            self._waiting[node.name] = Waiting(instance_id, now)
        self.state.mark_for_deletion([node.name])  # provisioning launches for its pods now
        if not node.unschedulable:
            try:
                self.kube.patch(NODES, node.name, {"spec": {"unschedulable": True}})
            except KubeError as err:  # it is drained all the same; only new pods could still land
                log.warning("cordoning interrupted node %s: %s", node.name, err)
        log.info("node %s: spot interruption of %s, launching its replacement before draining", node.name, instance_id)

    def _delete(self, node: NodeView, kind: str, instance_id: str, why: str) -> bool:
        try:
            self.kube.delete(NODES, node.name)
        except NotFoundError:
            return False
        except KubeError as err:
            log.warning("deleting interrupted node %s: %s", node.name, err)
            return False
        self.recorder.publish(
            Event(_ref(node), WARNING, "NodeTerminatingOnInterruption", "Node is terminating due to interruption")
        )
        provisioner = node.labels.get(L.PROVISIONER_NAME, "")
        NODES_TERMINATED.labels(reason="interruption", provisioner=provisioner).inc()
        MACHINES_TERMINATED.labels(reason="interruption", provisioner=provisioner).inc()
        self.decisions.record(Decision(self.name, TERMINATED, f"node/{node.name}", f"{kind} of {instance_id}: {why}"))
        log.info("node %s: %s of %s, draining (%s)", node.name, kind, instance_id, why)
        return True


class Replacements:
    """The job that drains waiting spot nodes once their replacement is there (every second,
    while `interruption` itself long-polls the queue)."""

    name = "interruption.replacements"

    def __init__(self, controller: InterruptionController) -> None:
        self.controller = controller

    def reconcile(self) -> list[str]:
        return self.controller.settle()


def _node_of(nodes: Any, instance_id: str) -> NodeView | None:
    for node in nodes:
        if node.owned and node.provider_id.startswith("aws:///") and node.provider_id.endswith("/" + instance_id):
            return node  # type: ignore[no-any-return]
    return None


def _ref(node: NodeView) -> ObjectRef:
    return ObjectRef("Node", node.name, "", str((node.obj.get("metadata") or {}).get("uid", "")))
