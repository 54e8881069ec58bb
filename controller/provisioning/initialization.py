"""`InitializationController`: label karpy's nodes `karpenter.sh/initialized=true` (spec §5.5.1).

A node karpy launched is initialized once it reports Ready, none of its provisioner's startup
taints is left on it, and every extended resource of its capacity (`nvidia.com/gpu`, …) is
registered in its allocatable — Karpenter's rule. Until then the scheduler tolerates its startup
taints and reads zero allocatable values from its instance type, and deprovisioning neither
considers it nor counts it as a ready replacement. `initialization_blocker()` is the pure rule;
`reconcile()` patches the label, conditional on the resourceVersion it judged.
"""

from __future__ import annotations

import logging

from controller.core import labels as L
from controller.kube.client import Kube
from controller.kube.errors import ConflictError, KubeError, NotFoundError
from controller.kube.resources import NODES
from controller.metrics import MACHINES_INITIALIZED
from controller.state.cluster import ClusterState
from controller.state.snapshot import NodeView, Snapshot

log = logging.getLogger(__name__)


def initialization_blocker(node: NodeView, snap: Snapshot) -> str:
    """Why the node is not initialized yet ("" when it now is). Pure."""
    if not node.ready:
        return "not Ready"
    view = snap.provisioners.get(node.provisioner or "")
    startup = set(view.spec.startup_taints) if view is not None and view.spec is not None else set()
    left = [str(t) for t in node.taints if t in startup]
    if left:
        return f"startup taint {left[0]} still present"
    for resource, amount in node.capacity.items():
        if "/" in resource and amount > 0 and node.allocatable.get(resource, 0) <= 0:
            return f"extended resource {resource} not registered"
    return ""


class InitializationController:
    name = "node.initialization"

    def __init__(self, state: ClusterState, kube: Kube) -> None:
        self.state, self.kube = state, kube

    def reconcile(self) -> list[str]:
        """Label every owned node that just became initialized; returns their names."""
        snap = self.state.snapshot()
        if not snap.synced:
            return []
        done = []
        for node in sorted(snap.nodes.values(), key=lambda n: n.name):
            if not node.owned or node.initialized or node.in_flight or node.deleting:
                continue
            if initialization_blocker(node, snap):
                continue
            rv = str((node.obj.get("metadata") or {}).get("resourceVersion") or "")
            patch = {"metadata": {"resourceVersion": rv, "labels": {L.INITIALIZED: "true"}}}
            try:
                self.kube.patch(NODES, node.name, patch)
            except (ConflictError, NotFoundError):
                continue  # changed or gone meanwhile: judged again next tick
            except (KubeError, OSError) as err:
                log.warning("labelling node %s initialized: %s", node.name, err)
                continue
            MACHINES_INITIALIZED.labels(provisioner=node.provisioner or "").inc()
            done.append(node.name)
        return done
