"""`GarbageCollectionController`: every instance has a Node and every Node an instance.

`reconcile()` (job `garbagecollection`, every 10 s): snapshot first, then `cloudprovider.list()`
— in that order, so a node created after the snapshot always has its instance in the list.
Decisions (`plan()`, pure):
- an instance tagged as karpy's whose provider ID no Node (real or in-flight) has, and that is
  older than `leak_seconds` (30 s; launches in progress are younger), is terminated;
- an owned Node (with a `karpenter.sh/provisioner-name` label and a provider ID of this cloud)
  that is not being deleted and whose instance is not in the list is deleted — its finalizer then
  finds the instance gone and lets the Node go.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Plan:
    leaked_instances: tuple[Instance, ...]
    orphan_nodes: tuple[str, ...]


def plan(snap: Snapshot, instances: Sequence[Instance], now: float, leak_seconds: float, scheme: str) -> Plan:
    known = {n.provider_id for n in snap.nodes.values() if n.provider_id}
    leaked = tuple(i for i in instances if i.provider_id not in known and now - i.created_at > leak_seconds)
    alive = {i.provider_id for i in instances}
    orphans = tuple(
        sorted(
            n.name
            for n in snap.nodes.values()
            if n.owned and not n.deleting and not n.in_flight and n.provider_id.startswith(scheme)
            and n.provider_id not in alive
        )
    )  # fmt: skip
    return Plan(leaked, orphans)


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
    ) -> None:
        self.state, self.kube, self.cloud, self.clock, self.decisions = state, kube, cloud, clock, decisions
        self.leak_seconds = leak_seconds

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
        todo = plan(snap, instances, self.clock.now(), self.leak_seconds, scheme)
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
