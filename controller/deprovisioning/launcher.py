"""Launching replacement capacity for a deprovisioning command.

`Launcher` is what the deprovisioning controller needs: launch one `NewNode` and return its
Node's name, leaving nothing behind on failure. `CloudLauncher` is a small implementation over
the cloud provider and the `Kube` adapter (instance, then the Node object with labels, taints,
startup taints, finalizer and providerID, recorded in cluster state as in flight); the
provisioning controller's launch path can be passed instead when wiring the process.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Protocol

from controller.apis import labels as L
from controller.cloudprovider.base import CloudProvider, Instance, NodeRequest
from controller.cloudprovider.errors import NodeNotFoundError
from controller.kube.client import Kube
from controller.kube.resources import NODES
from controller.scheduling.resources import format_resources
from controller.scheduling.types import NewNode, ProvisionerSpec
from controller.state.cluster import ClusterState

log = logging.getLogger(__name__)


class Launcher(Protocol):
    def launch(self, node: NewNode, reason: str) -> str:
        """Launch `node` (instance + Node object); return the Node name. Raises on failure and
        leaves no instance behind. Does not count `karpenter_nodes_created` (the caller does)."""
        ...


def node_object(inst: Instance, node: NewNode, spec: ProvisionerSpec | None) -> dict[str, Any]:
    taints = [*node.taints, *node.startup_taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": inst.name,
            "labels": {**node.labels, **inst.labels},
            "annotations": {**(spec.annotations if spec else {}), **inst.annotations},
            "finalizers": [L.TERMINATION_FINALIZER],
        },
        "spec": {
            "providerID": inst.provider_id,
            "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints],
        },
        "status": {"capacity": format_resources(inst.capacity), "allocatable": format_resources(inst.allocatable)},
    }


class CloudLauncher:
    def __init__(self, cloud: CloudProvider, kube: Kube, state: ClusterState) -> None:
        self._cloud = cloud
        self._kube = kube
        self._state = state

    def launch(self, node: NewNode, reason: str) -> str:
        inst = self._cloud.create(NodeRequest.from_new_node(node))
        views = self._state.snapshot().provisioners
        view = views.get(node.provisioner)
        obj = node_object(inst, node, view.spec if view is not None else None)
        try:
            created = self._kube.create(NODES, obj)
        except Exception:
            with contextlib.suppress(NodeNotFoundError):
                self._cloud.delete(inst.provider_id)
            raise
        self._state.record_node(created)
        log.info("launched replacement node %s (%s/%s/%s) for %s", inst.name, inst.instance_type,
                 inst.capacity_type, inst.zone, reason)
        return inst.name
