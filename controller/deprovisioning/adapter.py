"""Cluster state's snapshot → the deprovisioning `Snapshot` (`types.py`).

Pure: reads `controller.state.snapshot.Snapshot` views and the instance types per provisioner,
returns frozen deprovisioning inputs. Only owned nodes (with `karpenter.sh/provisioner-name`)
and loadable, non-deleting provisioners are kept. A node counts as initialized by
`NodeView.initialized` (the label `provisioning/initialization.py` sets).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from controller.core.timestamps import to_datetime
from controller.deprovisioning.types import DisruptionBudget, NodeInfo, PodInfo, ProvisionerInfo, Snapshot
from controller.scheduling.types import InstanceType
from controller.state.snapshot import NodeView, PodView
from controller.state.snapshot import Snapshot as StateSnapshot

log = logging.getLogger(__name__)


def pod_info(pod: PodView) -> PodInfo | None:
    if pod.request is None:
        return None
    spec = pod.obj.get("spec") or {}
    priority = spec.get("priority") if isinstance(spec, Mapping) else None
    return PodInfo(pod.request, dict(pod.annotations), int(priority or 0), pod.deleting)


def node_info(node: NodeView) -> NodeInfo:
    state = node.state_node()
    pods = tuple(info for info in (pod_info(p) for p in node.pods) if info is not None)
    return NodeInfo(
        state=state,
        created=to_datetime(node.created),
        annotations=dict(node.annotations),
        pods=pods,
        deleting=node.deleting,
        nominated=node.nominated,
    )


def deprovisioning_snapshot(
    state: StateSnapshot, instance_types: Mapping[str, Sequence[InstanceType]], consolidated: bool = False
) -> Snapshot:
    """The frozen deprovisioning input of one pass."""
    provisioners = {}
    for name, view in sorted(state.provisioners.items()):
        if view.provisioner is None or view.spec is None or view.deleting:
            continue
        provisioners[name] = ProvisionerInfo(view.provisioner, view.spec, tuple(instance_types.get(name, ())))
    nodes = tuple(node_info(n) for _, n in sorted(state.nodes.items()) if n.owned)
    pdbs = tuple(
        DisruptionBudget(p.namespace, p.name, p.selector, p.disruptions_allowed)
        for p in state.pdbs
        if p.selector is not None
    )
    pending = tuple(p.request for p in state.pending_pods() if p.request is not None and not p.request.ignore_reason)
    daemonsets = state.daemonset_pods
    return Snapshot(
        now=to_datetime(state.now),
        nodes=nodes,
        provisioners=provisioners,
        pdbs=pdbs,
        pending_pods=pending,
        daemonsets=daemonsets,
        consolidated=consolidated,
        volumes=state.volumes,
    )
