"""`CounterController`: each Provisioner's status (spec §1.1, the "counter").

`reconcile()` (job `counter`) keeps, on the status subresource and patched only when changed:
- `resources`: the sum of `capacity` of the provisioner's nodes not marked for deletion
  (in-flight nodes included), zero values dropped (Karpenter's field);
- `nodes`: how many such nodes there are (karpy's addition, for `kubectl get provisioners`);
- a `Ready` condition (karpy's addition): `False` while the controller cannot use the
  Provisioner — its spec does not load (reason `InvalidSpec`) or its `providerRef` names an
  AWSNodeTemplate that does not exist (`NodeTemplateNotFound`) — with the message naming the
  cause; `lastTransitionTime` moves only when the status flips.
Also sets the `karpenter_provisioner_{limit,usage,usage_pct}` gauges.
"""

from __future__ import annotations

import logging
from typing import Any

from controller.apis.awsnodetemplate import NodeTemplateNotFoundError, resolve_node_template
from controller.apis.errors import InvalidObjectError
from controller.core.resources import format_resources
from controller.core.timestamps import format_timestamp
from controller.kube.client import Kube
from controller.kube.errors import KubeError
from controller.kube.resources import PROVISIONERS
from controller.metrics import resource_column
from controller.provisioning.metrics import PROVISIONER_LIMIT, PROVISIONER_USAGE, PROVISIONER_USAGE_PCT
from controller.state.cluster import ClusterState
from controller.state.snapshot import ProvisionerView, Snapshot

log = logging.getLogger(__name__)


def ready_condition(view: ProvisionerView, snap: Snapshot, default_template: str | None = None) -> dict[str, str]:
    """The Ready condition the Provisioner should carry now (pure; keeps the transition time
    of the current one when its status is unchanged). `default_template`: the cloud provider's
    AWSNodeTemplate for Provisioners that name none (AWS: `default`; simulated: none needed)."""
    status, reason, message = "True", "Ready", ""
    if view.error or view.provisioner is None:
        status, reason, message = "False", "InvalidSpec", view.error or "the spec could not be read"
    else:
        prov = view.provisioner
        try:
            resolve_node_template(
                view.name, prov.provider_ref_name, prov.provider, snap.awsnodetemplates, default_template
            )
        except NodeTemplateNotFoundError as err:
            status, reason, message = "False", "NodeTemplateNotFound", str(err)
        except (InvalidObjectError, ValueError, TypeError, KeyError) as err:
            status, reason, message = "False", "InvalidNodeTemplate", f"reading its AWSNodeTemplate: {err}"
    current = _current_ready(view)
    since = current.get("lastTransitionTime") if current.get("status") == status else None
    stamp = since or format_timestamp(snap.now)
    out = {"type": "Ready", "status": status, "reason": reason, "lastTransitionTime": str(stamp)}
    if message:
        out["message"] = message[:1024]
    return out


def _current_ready(view: ProvisionerView) -> dict[str, Any]:
    status = view.obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for c in conditions if isinstance(conditions, list) else []:
        if isinstance(c, dict) and c.get("type") == "Ready":
            return c
    return {}


def status_patches(snap: Snapshot, default_template: str | None = None) -> dict[str, dict[str, Any]]:
    """Provisioner name → the merge patch its status needs (pure; empty when up to date)."""
    out = {}
    for name, view in snap.provisioners.items():
        patch: dict[str, Any] = {}
        usage = snap.provisioner_usage(name)
        if usage != dict(view.status_resources):
            resources: dict[str, Any] = dict(format_resources(usage))
            for gone in set(view.status_resources) - set(usage):
                resources[gone] = None
            patch["resources"] = resources
        raw = view.obj.get("status")
        status: dict[str, Any] = raw if isinstance(raw, dict) else {}
        nodes = sum(1 for n in snap.nodes.values() if n.provisioner == name and not n.marked_for_deletion)
        if status.get("nodes") != nodes:
            patch["nodes"] = nodes
        ready = ready_condition(view, snap, default_template)
        if {k: v for k, v in _current_ready(view).items() if k != "severity"} != ready:
            listed = status.get("conditions")
            others = (
                [c for c in listed if isinstance(c, dict) and c.get("type") != "Ready"]
                if isinstance(listed, list)
                else []
            )
            patch["conditions"] = [*others, ready]  # a merge patch replaces the list as a whole
        if patch:
            out[name] = {"status": patch}
    return out


def metric_value(resource: str, amount: int) -> float:
    """A resource amount in the unit Karpenter's metrics use: CPU in cores, the rest as counted."""
    return amount / 1000.0 if resource == "cpu" else float(amount)


class CounterController:
    name = "counter"

    def __init__(self, state: ClusterState, kube: Kube, default_template: str | None = None) -> None:
        self.state, self.kube, self.default_template = state, kube, default_template

    def reconcile(self) -> list[str]:
        snap = self.state.snapshot()
        if not snap.synced:
            return []
        patched = []
        for name, patch in status_patches(snap, self.default_template).items():
            try:
                self.kube.patch(PROVISIONERS, name, patch, subresource="status")
                patched.append(name)
            except KubeError as err:
                log.warning("updating status of provisioner %s: %s", name, err)
        for name, view in snap.provisioners.items():
            usage = snap.provisioner_usage(name)
            limits = view.spec.limits if view.spec else {}
            # Karpenter exports CPU in cores (karpy keeps millicores internally), resource types
            # snake-cased, and a usage of 100 % against a zero limit
            for resource, value in usage.items():
                column = resource_column(resource)
                PROVISIONER_USAGE.labels(resource_type=column, provisioner=name).set(metric_value(resource, value))
            for resource, limit in limits.items():
                column = resource_column(resource)
                PROVISIONER_LIMIT.labels(resource_type=column, provisioner=name).set(metric_value(resource, limit))
                pct = 100.0 * usage.get(resource, 0) / limit if limit else 100.0
                PROVISIONER_USAGE_PCT.labels(resource_type=column, provisioner=name).set(pct)
        return patched
