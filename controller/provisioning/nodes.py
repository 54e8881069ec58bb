"""The Node object karpy creates for a launched instance (spec §8.2; design.md). Pure.

Labels: `scheduling.scheduler.launch_labels` (the one rule: the new node's labels without
restricted keys, overlaid by the instance's — for the simulated cloud the kwok label too — the
provisioner name, and `kubernetes.io/hostname` set to the node's name, as its kubelet would).
Annotations: the provisioner's plus the instance's. Taints: taints + startup taints. Finalizer
`karpenter.sh/termination`; `spec.providerID`; an ownerReference to the Provisioner (so deleting it cascades); status
capacity and allocatable as the instance reports them (kwok keeps them).

`hold_for_binding`: the node is created cordoned with the `BINDING_HOLD` annotation, so that
kube-scheduler places nothing on it while karpy binds the pods it computed the node for (binding
ignores cordons; two binders racing for one node would overcommit it). `release_patch()`
uncordons it afterwards; provisioning also releases any held node older than
`BINDING_HOLD_SECONDS` (a controller killed between launch and release) — keeping the cordon of
one deprovisioning has cordoned meanwhile (`deprovisioning/cordon.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.cloudprovider.base import Instance
from controller.core import labels as L
from controller.core.resources import format_resources
from controller.core.taints import taint_to_wire
from controller.scheduling.scheduler import launch_labels
from controller.scheduling.types import NewNode

BINDING_HOLD_SECONDS = 30.0


def release_patch(keep_cordoned: bool = False) -> dict[str, Any]:
    """The merge patch that ends a binding hold (uncordoning, unless another cordon holds the node)."""
    patch: dict[str, Any] = {"metadata": {"annotations": {L.BINDING_HOLD: None}}}
    if not keep_cordoned:
        patch["spec"] = {"unschedulable": None}
    return patch


def node_object(
    node: NewNode,
    instance: Instance,
    annotations: Mapping[str, str] | None = None,
    owner: Mapping[str, Any] | None = None,
    hold_for_binding: bool = False,
) -> dict[str, Any]:
    """`owner` is the Provisioner object (for the ownerReference), when known."""
    meta: dict[str, Any] = {
        "name": instance.name,
        "labels": launch_labels(node, instance.labels, instance.name),
        "annotations": {**(annotations or {}), **instance.annotations},
        "finalizers": [L.TERMINATION_FINALIZER],
    }
    owner_meta = (owner or {}).get("metadata") or {}
    if owner_meta.get("uid"):
        meta["ownerReferences"] = [
            {
                "apiVersion": "karpenter.sh/v1alpha5",
                "kind": "Provisioner",
                "name": owner_meta.get("name"),
                "uid": owner_meta["uid"],
                "blockOwnerDeletion": True,
            }
        ]
    taints = [taint_to_wire(t) for t in (*node.taints, *node.startup_taints)]
    spec: dict[str, Any] = {"providerID": instance.provider_id}
    if taints:
        spec["taints"] = taints
    if hold_for_binding:
        spec["unschedulable"] = True
        meta["annotations"][L.BINDING_HOLD] = "true"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": spec,
        "status": {
            "capacity": format_resources(instance.capacity),
            "allocatable": format_resources(instance.allocatable),
        },
    }
