"""`GarbageCollectionController`: every instance has a Node and every Node an instance.

`reconcile()` (job `garbagecollection`, every 10 s): snapshot first, then `cloudprovider.list()`
— in that order, so a node created after the snapshot always has its instance in the list.
Decisions (`plan()`, pure):
- an instance tagged as karpy's whose provider ID no Node (real or in-flight) has, and that is
  older than `leak_seconds` (30 s; launches in progress are younger), is terminated;
- an owned Node (with a `karpenter.sh/provisioner-name` label and a provider ID of this cloud)
  that is not being deleted and whose instance is not in the list is deleted — its finalizer then
  finds the instance gone and lets the Node go — but only if the instance is known to have
  existed: this controller listed it earlier, or the cloud remembers it (`RemembersInstances`,
  e.g. the simulated store keeps terminated rows, EC2 its terminated instances with their tags for
  about an hour). A cloud store that is empty or not the one the nodes were launched from (a
  failover to a replica with its own store) thus deletes nothing; such nodes are
  `unconfirmed_nodes`, logged and left alone (issue 14, item 3).
- at most `max_node_deletions` nodes are deleted per pass (the rest wait for the next pass).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from controller.clock import Clock
from controller.cloudprovider.base import CloudProvider, Instance, terminate_instance
from controller.cloudprovider.errors import CloudProviderError
from controller.decisions import GARBAGE_COLLECTED, Decision, DecisionLog
from controller.kube.client import Kube
from controller.kube.errors import KubeError, NotFoundError
from controller.kube.resources import NODES
from controller.state.cluster import ClusterState
from controller.state.snapshot import Snapshot

log = logging.getLogger(__name__)


MAX_NODE_DELETIONS = 10


@runtime_checkable
class RemembersInstances(Protocol):
    def has_seen(self, provider_id: str) -> bool:
        """True if the cloud has a record of this instance, running or terminated."""
        ...


@dataclass(frozen=True)
class Plan:
    leaked_instances: tuple[Instance, ...]
    orphan_nodes: tuple[str, ...]
    unconfirmed_nodes: tuple[str, ...] = ()  # no instance, and none known to have existed


@dataclass(frozen=True)
class PlanInput:
    now: float
    leak_seconds: float
    scheme: str
    seen: Callable[[str], bool]  # was this provider ID's instance known to exist?
    max_node_deletions: int = MAX_NODE_DELETIONS


def plan(snap: Snapshot, instances: Sequence[Instance], given: PlanInput) -> Plan:
    """Pure: what to terminate and which nodes to delete this pass."""
    known = {n.provider_id for n in snap.nodes.values() if n.provider_id}
    leaked = tuple(i for i in instances if i.provider_id not in known and given.now - i.created_at > given.leak_seconds)
    alive = {i.provider_id for i in instances}
    missing = sorted(
        (n.name, n.provider_id)
        for n in snap.nodes.values()
        if n.owned and not n.deleting and not n.in_flight and n.provider_id.startswith(given.scheme)
        and n.provider_id not in alive
    )  # fmt: skip
    orphans = [name for name, pid in missing if given.seen(pid)]
    unconfirmed = tuple(name for name, pid in missing if name not in set(orphans))
    return Plan(leaked, tuple(orphans[: max(given.max_node_deletions, 0)]), unconfirmed)


class GarbageCollectionController:
    name = "garbagecollection"

    def __init__(
        self,
        state: ClusterState,
        kube: Kube,
        cloud: CloudProvider,
        clock: Clock,
        decisions: DecisionLog,
        leak_seconds: float = 30.0,
        max_node_deletions: int = MAX_NODE_DELETIONS,
    ) -> None:
        self.state, self.kube, self.cloud, self.clock, self.decisions = state, kube, cloud, clock, decisions
        self.leak_seconds = leak_seconds
        self.max_node_deletions = max_node_deletions
        self._seen_alive: set[str] = set()  # provider IDs this controller has listed as running
        self._reported: set[str] = set()

    def _seen(self, provider_id: str) -> bool:
        if provider_id in self._seen_alive:
            return True
        if isinstance(self.cloud, RemembersInstances):
            try:
                return self.cloud.has_seen(provider_id)
            except CloudProviderError:
                return False
        return False

    def reconcile(self) -> Plan:
        snap = self.state.snapshot()
        if not snap.synced:
            return Plan((), ())
        try:
            instances = self.cloud.list()
        except CloudProviderError as err:
            log.warning("listing instances: %s", err)
            return Plan((), ())
        scheme = f"{self.cloud.name}://"
        todo = plan(
            snap, instances,
            PlanInput(self.clock.now(), self.leak_seconds, scheme, self._seen, self.max_node_deletions),
        )  # fmt: skip
        self._seen_alive.update(i.provider_id for i in instances)
        for name in todo.unconfirmed_nodes:
            if name not in self._reported:
                log.warning(
                    "node %s has no instance of karpy's (none seen, or not launched by karpy): leaving it", name
                )
        self._reported = set(todo.unconfirmed_nodes)
        for inst in todo.leaked_instances:
            if not terminate_instance(self.cloud, inst.provider_id, f"terminating leaked instance {inst.provider_id}"):
                continue
            log.info("garbage collected instance %s (no node for %.0fs)", inst.provider_id, self.leak_seconds)
            self.decisions.record(
                Decision(self.name, GARBAGE_COLLECTED, f"instance/{inst.provider_id}", "instance without a node",
                         provisioner=inst.provisioner, instance_type=inst.instance_type, zone=inst.zone,
                         capacity_type=inst.capacity_type, price=inst.price)
            )  # fmt: skip
        for name in todo.orphan_nodes:
            try:
                self.kube.delete(NODES, name)
            except NotFoundError:
                continue
            except KubeError as err:
                log.warning("deleting node %s without an instance: %s", name, err)
                continue
            log.info("garbage collected node %s (its instance is gone)", name)
            self.decisions.record(Decision(self.name, GARBAGE_COLLECTED, f"node/{name}", "node without an instance"))
        return todo
