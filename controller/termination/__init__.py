"""Termination: the `karpenter.sh/termination` finalizer (spec §7).

`controller.TerminationController.reconcile()` (job `node.termination`) drives every deleting
node that carries the finalizer: cordon, drain (`terminator.drain_plan`, pure), terminate the
instance, remove the finalizer. Deprovisioning (and anything else) deletes a node with
`delete_node(kube, state, name)`: it only deletes the Node object; the finalizer does the rest,
exactly as for `kubectl delete node`.
"""

from __future__ import annotations

from controller.kube.client import Kube
from controller.kube.errors import NotFoundError
from controller.kube.resources import NODES
from controller.state.cluster import ClusterState


def delete_node(kube: Kube, state: ClusterState | None, name: str) -> bool:
    """Ask for a node's termination; False when it was already gone."""
    if state is not None:
        state.mark_for_deletion([name])
    try:
        kube.delete(NODES, name)
    except NotFoundError:
        return False
    return True
