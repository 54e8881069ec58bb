"""`CounterController`: each Provisioner's `status.resources` (spec §1.1, the "counter").

`reconcile()` (job `counter`): the sum of `capacity` of the provisioner's nodes not marked for
deletion (in-flight nodes included), zero values dropped; patched onto the status subresource
only when it changed. Also sets the `karpenter_provisioner_{limit,usage,usage_pct}` gauges.
"""

from __future__ import annotations

import logging
from typing import Any

from controller.core.resources import format_resources
from controller.kube.client import Kube
from controller.kube.errors import KubeError
from controller.kube.resources import PROVISIONERS
from controller.provisioning.metrics import PROVISIONER_LIMIT, PROVISIONER_USAGE, PROVISIONER_USAGE_PCT
from controller.state.cluster import ClusterState
from controller.state.snapshot import Snapshot

log = logging.getLogger(__name__)


def status_patches(snap: Snapshot) -> dict[str, dict[str, Any]]:
    """Provisioner name → the merge patch its status needs (pure; empty when up to date)."""
    out = {}
    for name, view in snap.provisioners.items():
        usage = snap.provisioner_usage(name)
        if usage == dict(view.status_resources):
            continue
        resources: dict[str, Any] = dict(format_resources(usage))
        for gone in set(view.status_resources) - set(usage):
            resources[gone] = None
        out[name] = {"status": {"resources": resources}}
    return out



def metric_value(resource: str, amount: int) -> float:
    """A resource amount in the unit Karpenter's metrics use: CPU in cores, the rest as counted."""
    return amount / 1000.0 if resource == "cpu" else float(amount)

class CounterController:
    name = "counter"

    def __init__(self, state: ClusterState, kube: Kube) -> None:
        self.state, self.kube = state, kube

    def reconcile(self) -> list[str]:
        snap = self.state.snapshot()
        if not snap.synced:
            return []
        patched = []
        for name, patch in status_patches(snap).items():
            try:
                self.kube.patch(PROVISIONERS, name, patch, subresource="status")
                patched.append(name)
            except KubeError as err:
                log.warning("updating status of provisioner %s: %s", name, err)
        for name, view in snap.provisioners.items():
            usage = snap.provisioner_usage(name)
            limits = view.spec.limits if view.spec else {}
            # Karpenter exports CPU in cores (karpy keeps millicores internally)
            for resource, value in usage.items():
                PROVISIONER_USAGE.labels(resource_type=resource, provisioner=name).set(metric_value(resource, value))
            for resource, limit in limits.items():
                PROVISIONER_LIMIT.labels(resource_type=resource, provisioner=name).set(metric_value(resource, limit))
                if limit:
                    pct = 100.0 * usage.get(resource, 0) / limit
                    PROVISIONER_USAGE_PCT.labels(resource_type=resource, provisioner=name).set(pct)
        return patched
