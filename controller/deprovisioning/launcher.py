"""Launching replacement capacity for a deprovisioning command.

`Launcher` is the one thing the deprovisioning controller needs: launch one `NewNode` and return
its Node's name, leaving nothing behind on failure. `ProvisioningLauncher` adapts provisioning's
launch path (`controller.provisioning.launcher.Launcher`: limits, cloud create, Node object with
labels, taints, startup taints, finalizer and providerID, in-flight record, nomination,
`karpenter_nodes_created{reason=<deprovisioner>/<action>}`), so a replacement is made exactly
like any other node.
"""

from __future__ import annotations

from typing import Protocol

from controller.apis.awsnodetemplate import NodeTemplateNotFoundError
from controller.provisioning.launcher import Launcher as NodeLauncher
from controller.provisioning.launcher import LaunchError
from controller.provisioning.nodetemplates import node_template
from controller.scheduling.types import NewNode
from controller.state.cluster import ClusterState


class Launcher(Protocol):
    def launch(self, node: NewNode, reason: str) -> str:
        """Launch `node` (instance + Node object); return the Node name. Raises on failure and
        leaves no instance behind."""
        ...


class ProvisioningLauncher:
    def __init__(self, launcher: NodeLauncher, state: ClusterState) -> None:
        self._launcher = launcher
        self._state = state

    def launch(self, node: NewNode, reason: str) -> str:
        snap = self._state.snapshot()
        view = snap.provisioners.get(node.provisioner)
        if view is None or view.spec is None:
            raise LaunchError(f"launching node: provisioner {node.provisioner} not found")
        usage = snap.provisioner_usage(node.provisioner)
        try:
            template = node_template(view, snap, self._launcher.cloud)
        except NodeTemplateNotFoundError as err:
            raise LaunchError(f"launching node: {err}") from err
        result = self._launcher.launch(
            node, view.spec, usage, reason=reason, controller="deprovisioning", node_template=template
        )
        return result.node_name
