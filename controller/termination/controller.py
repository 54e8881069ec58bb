"""`TerminationController`: finalizer handling for deleting nodes (spec §7).

`reconcile()` (job `node.termination`), per node with a deletion timestamp and the
`karpenter.sh/termination` finalizer: (1) cordon — `spec.unschedulable` and the
`node.kubernetes.io/exclude-from-external-load-balancers=karpenter` label; (2) drain — evict the
pods `terminator.drain_plan` names through the Eviction API, each with its own backoff
(100 ms doubling to 10 s); an HTTP 429 (a PodDisruptionBudget forbids it now) is a
`FailedDraining` event and a retry; do-not-evict pods are waited for. The nodes of a pass are
drained together (`DRAIN_WORKERS` calls at once, as Karpenter's termination reconciles its nodes
concurrently): first every node is cordoned, then every pod of every node is evicted, then
their `Evicted` events are written, so a 51-node consolidation is one drain, not 51 one after
another (issue 21: 5 minutes at 20,000 pods, kube-scheduler counting the pods still on the nodes
while karpy's plan had them moved); (3) when drained,
`cloudprovider.delete` (already gone is fine) — the instances of every node drained in a pass
at once, so the provider can merge them into one TerminateInstances; once the cloud refuses one
for its request rate (`ThrottledError`, RequestLimitExceeded) the pass calls no more and no
delete is tried again before its retry-after has passed (the nodes wait, drained; one log line,
not one warning a node); (4) remove the finalizer
(a 409 means requeue).
If the instance is already gone while pods remain, the finalizer is removed at once. Every step
is idempotent, so a controller killed at any point resumes where it stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import dataclass, field
from typing import Any, TypeVar

from controller.clock import Clock
from controller.cloudprovider.base import CloudProvider
from controller.cloudprovider.errors import CloudProviderError, NodeNotFoundError, ThrottledError
from controller.core import labels as L
from controller.decisions import TERMINATED, WAITING, Decision, DecisionLog
from controller.events import EventRecorder
from controller.kube.client import Kube
from controller.kube.errors import ConflictError, KubeError, NotFoundError, TooManyRequestsError
from controller.kube.resources import NODES
from controller.metrics import NODES_TERMINATION_TIME
from controller.state.cluster import ClusterState
from controller.state.snapshot import NodeView, PodView
from controller.termination import events
from controller.termination.terminator import DrainPlan, drain_plan

log = logging.getLogger(__name__)
_T = TypeVar("_T")
_R = TypeVar("_R")

BACKOFF_MIN, BACKOFF_MAX = 0.1, 10.0
# deletes under way at once: a pass's TerminateInstances (and DescribeInstances) hold at most this many
# instances (Karpenter's batchers take up to 500); at 32, 5,000 nodes took 157 of each, at 128 40
TERMINATE_WORKERS = 128
# cordons, evictions (each with its event) and instance lookups under way at once; the client's
# connection pool holds 32 connections, which provisioning's binds share
DRAIN_WORKERS = 16


@dataclass
class TerminationPass:
    """What one termination pass did (returned for tests and logs)."""

    cordoned: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    terminated: list[str] = field(default_factory=list)


class TerminationController:
    name = "node.termination"

    def __init__(
        self,
        state: ClusterState,
        kube: Kube,
        cloud: CloudProvider,
        clock: Clock,
        recorder: EventRecorder,
        decisions: DecisionLog,
        workers: int = TERMINATE_WORKERS,
        drain_workers: int = DRAIN_WORKERS,
    ) -> None:
        self.state, self.kube, self.cloud, self.clock = state, kube, cloud, clock
        self.recorder, self.decisions = recorder, decisions
        self._backoff: dict[str, tuple[float, float]] = {}  # pod key -> (next try, delay)
        self._terminations = ThreadPoolExecutor(workers, thread_name_prefix="terminate")
        self._drains = ThreadPoolExecutor(drain_workers, thread_name_prefix="drain")
        self._throttled_until = float("-inf")  # the cloud refused a terminate: no call before then

    def reconcile(self) -> TerminationPass:
        outcome = TerminationPass()
        snap = self.state.snapshot()
        if not snap.synced:
            return outcome
        deleting = [
            node for node in sorted(snap.nodes.values(), key=lambda n: n.name)
            if node.deleting and L.TERMINATION_FINALIZER in node.finalizers and not node.in_flight
        ]  # fmt: skip
        ready = self._drain_all(deleting, snap.now, outcome)
        # every drained node's instance at once, so the provider can merge them into one call
        # (TerminateInstances, `cloudprovider/batcher.py`); the finalizers then go in node order
        if ready and snap.now < self._throttled_until:
            ready = []  # the cloud asked us to wait: drained nodes keep their finalizer until then
        throttled: list[ThrottledError] = []
        gone = list(self._terminations.map(lambda n: copy_context().run(self._terminate_instance, n, throttled), ready))
        if throttled:
            wait = max(err.retry_after for err in throttled)
            self._throttled_until = snap.now + wait
            log.info(
                "terminating instances throttled, %d node(s) wait %.1fs: %s", gone.count(False), wait, throttled[0]
            )
        for node, done in zip(ready, gone, strict=True):
            if not done:
                continue
            try:
                self._remove_finalizer(node, snap.now, outcome)
            except ConflictError:
                continue
            except (KubeError, OSError) as err:
                log.warning("terminating node %s: %s", node.name, err)
        live = {p.key for n in snap.nodes.values() if n.deleting for p in n.pods}
        for key in [k for k in self._backoff if k not in live]:
            del self._backoff[key]
        return outcome

    def _drain_all(self, nodes: list[NodeView], now: float, outcome: TerminationPass) -> list[NodeView]:
        """Cordon every node, then evict every pod of every node, `DRAIN_WORKERS` calls at once;
        the nodes whose instance may go (drained, or already gone), in the given order."""
        plans = self._map(lambda node: self._cordoned(node, now, outcome), nodes)
        busy = [(node, plan) for node, plan in zip(nodes, plans, strict=True) if plan is not None and not plan.drained]
        evictions = [(node, pod) for node, plan in busy for pod in plan.evict]
        evicted = self._map(lambda job: self._evict(*job, now, outcome), evictions)
        # every eviction before any of their events: the pods leave at the pace of one call each
        self._map(lambda pod: self.recorder.publish(events.evicted(pod)), [p for p in evicted if p is not None])
        gone = self._map(lambda job: self._blocked(*job, outcome), busy)
        waiting = {node.name for (node, _), done in zip(busy, gone, strict=True) if not done}
        return [node for node, plan in zip(nodes, plans, strict=True) if plan is not None and node.name not in waiting]

    def _map(self, fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
        """`fn` over `items` on the drain workers (each call in a copy of this context), in order."""
        return list(self._drains.map(lambda item: copy_context().run(fn, item), items))

    def _cordoned(self, node: NodeView, now: float, outcome: TerminationPass) -> DrainPlan | None:
        """Cordon the node; its drain plan, or None when the node could not be cordoned now."""
        try:
            if not node.unschedulable or node.labels.get(L.EXCLUDE_LB) != "karpenter":
                labels = {L.EXCLUDE_LB: "karpenter"}
                self.kube.patch(NODES, node.name, {"spec": {"unschedulable": True}, "metadata": {"labels": labels}})
                outcome.cordoned.append(node.name)
                log.info("cordoned node %s", node.name)
        except ConflictError:
            return None  # someone changed the node first: next tick
        except (KubeError, OSError) as err:
            log.warning("terminating node %s: %s", node.name, err)
            return None
        return drain_plan(node, now)

    def _blocked(self, node: NodeView, plan: DrainPlan, outcome: TerminationPass) -> bool:
        """A node still draining after this pass's evictions: say why; True if its instance is
        gone anyway (then its pods are not waited for)."""
        for pod in plan.do_not_evict:
            why = f"pod {pod.key} has the {L.DO_NOT_EVICT} annotation; waiting for it to finish"
            self.decisions.record_once(Decision(self.name, WAITING, f"node/{node.name}", why, (pod.key,)))
        outcome.blocked.append(node.name)
        count = len(plan.evict) + len(plan.waiting)
        self.recorder.publish(events.failed_draining(node, f"{count} pods are waiting to be evicted"))
        if not self._instance_gone(node):
            return False
        log.info("instance of node %s is gone; not waiting for %d pod(s)", node.name, count)
        return True

    def _terminate_instance(self, node: NodeView, throttled: list[ThrottledError]) -> bool:
        """True once the node's instance is gone; after a refusal for the request rate (this pass's
        `throttled`) no further call is made."""
        if throttled:
            return False
        try:
            self.cloud.delete(node.provider_id)
        except ThrottledError as err:
            throttled.append(err)
            return False
        except NodeNotFoundError:
            return True  # already gone
        except CloudProviderError as err:  # retried next pass; garbage collection is the last resort
            log.warning("terminating instance of node %s: %s", node.name, err)
            return False
        return True

    def _evict(self, node: NodeView, pod: PodView, now: float, outcome: TerminationPass) -> PodView | None:
        """Evict the pod unless its backoff runs; the pod when this call evicted it (its `Evicted`
        event is the caller's); a refusal backs it off (a PDB's 429: an event)."""
        next_try, delay = self._backoff.get(pod.key, (0.0, BACKOFF_MIN / 2))
        if now < next_try:
            return None
        try:
            self.kube.evict(pod.namespace, pod.name)
        except NotFoundError:
            outcome.evicted.append(pod.key)
            return None
        except TooManyRequestsError:
            self.recorder.publish(events.failed_draining(node, f"evicting pod {pod.key} violates a PDB"))
            why = f"evicting pod {pod.key} violates a PodDisruptionBudget; retrying"
            self.decisions.record_once(Decision(self.name, WAITING, f"node/{node.name}", why, (pod.key,)))
            self._backoff[pod.key] = (now + min(delay * 2, BACKOFF_MAX), min(delay * 2, BACKOFF_MAX))
            return None
        except (KubeError, OSError) as err:
            log.warning("evicting pod %s: %s", pod.key, err)
            self._backoff[pod.key] = (now + min(delay * 2, BACKOFF_MAX), min(delay * 2, BACKOFF_MAX))
            return None
        self._backoff.pop(pod.key, None)
        outcome.evicted.append(pod.key)
        return pod

    def _instance_gone(self, node: NodeView) -> bool:
        try:
            self.cloud.get(node.provider_id)
        except NodeNotFoundError:
            return True
        except CloudProviderError:
            return False
        return False

    def _patch_finalizers(self, name: str, obj: Mapping[str, Any]) -> bool:
        """Remove karpy's finalizer; False if the node kept changing under us (next pass retries).

        The list is replaced whole, so the patch carries the resourceVersion it was computed from:
        a finalizer another controller added meanwhile is never dropped (a 409 re-reads once).
        """
        for attempt in (1, 2):
            meta = obj.get("metadata") or {}
            finalizers = [f for f in meta.get("finalizers") or [] if f != L.TERMINATION_FINALIZER]
            patch: dict[str, Any] = {"finalizers": finalizers or None}
            if meta.get("resourceVersion"):
                patch["resourceVersion"] = meta["resourceVersion"]
            try:
                self.kube.patch(NODES, name, {"metadata": patch})
                return True
            except NotFoundError:
                return True
            except ConflictError:
                if attempt == 2:
                    log.info("node %s changed while removing its finalizer; retrying later", name)
                    return False
                try:
                    obj = self.kube.get(NODES, name)
                except NotFoundError:
                    return True
        return False

    def _remove_finalizer(self, node: NodeView, now: float, outcome: TerminationPass) -> None:
        if not self._patch_finalizers(node.name, node.obj):
            return
        provisioner = node.provisioner or ""
        if node.deletion_timestamp is not None:
            NODES_TERMINATION_TIME.labels(provisioner=provisioner).observe(max(0.0, now - node.deletion_timestamp))
        outcome.terminated.append(node.name)
        self.decisions.record(
            Decision(
                self.name, TERMINATED, f"node/{node.name}", "node deleted: drained and instance terminated",
                provisioner=provisioner, instance_type=node.instance_type or "", capacity_type=node.capacity_type or "",
            )
        )  # fmt: skip
        log.info("deleted node %s", node.name)
