"""Builders of Kubernetes objects (plain dicts, as the API server sends them) with defaults.

`make_pod(name, cpu="500m", ...)`, `make_node(name, ...)`, `make_provisioner(name, ...)`,
`make_awsnodetemplate(name, ...)`, `make_pdb(name, ...)`. Pending pods carry
`PodScheduled=False reason=Unschedulable`, as kube-scheduler leaves them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.core import labels as L

Obj = dict[str, Any]


def make_pod(
    name: str,
    namespace: str = "default",
    cpu: str = "500m",
    memory: str = "256Mi",
    node: str = "",
    pending: bool = True,
    phase: str = "Pending",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    owner_kind: str = "ReplicaSet",
    priority_class: str = "",
    **spec: Any,
) -> Obj:
    conditions = []
    if pending and not node:
        conditions.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable"})
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{namespace}-{name}",
        "labels": dict(labels or {"app": "web"}),
        "annotations": dict(annotations or {}),
        "creationTimestamp": "2024-01-01T00:00:00Z",
        "resourceVersion": "1",
    }
    if owner_kind:
        meta["ownerReferences"] = [{"kind": owner_kind, "name": "owner", "controller": True, "apiVersion": "v1"}]
    pod_spec: Obj = {
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
        **spec,
    }
    if node:
        pod_spec["nodeName"] = node
    if priority_class:
        pod_spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": pod_spec,
        "status": {"phase": "Running" if node and phase == "Pending" else phase, "conditions": conditions},
    }


def make_node(
    name: str,
    provisioner: str | None = "default",
    cpu: str = "2",
    memory: str = "8Gi",
    pods: str = "29",
    provider_id: str | None = None,
    labels: Mapping[str, str] | None = None,
    finalizers: tuple[str, ...] = (L.TERMINATION_FINALIZER,),
    deleting: bool = False,
    ready: bool = True,
    instance_type: str = "m5.large",
    initialized: bool = True,
) -> Obj:
    all_labels = {L.INSTANCE_TYPE: instance_type, L.CAPACITY_TYPE: "on-demand", L.ZONE: "us-west-2a"}
    if provisioner:
        all_labels[L.PROVISIONER_NAME] = provisioner
        if initialized:
            all_labels[L.INITIALIZED] = "true"
    all_labels.update(labels or {})
    meta: Obj = {
        "name": name,
        "labels": all_labels,
        "finalizers": list(finalizers),
        "creationTimestamp": "2024-01-01T00:00:00Z",
        "resourceVersion": "1",
    }
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:01:00Z"
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": {"providerID": provider_id if provider_id is not None else f"fake:///us-west-2a/{name}"},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def make_provisioner(name: str = "default", **spec: Any) -> Obj:
    return {
        "apiVersion": "karpenter.sh/v1alpha5",
        "kind": "Provisioner",
        "metadata": {"name": name, "resourceVersion": "1", "generation": 1},
        "spec": spec,
    }


def make_awsnodetemplate(name: str = "default", **spec: Any) -> Obj:
    """An AWSNodeTemplate with the selectors it needs to be valid; a `None` value drops a field."""
    base: dict[str, Any] = {"subnetSelector": {"karpenter.sh/discovery": "c"}, "securityGroupSelector": {"a": "b"}}
    base.update(spec)
    return {
        "apiVersion": "karpenter.k8s.aws/v1alpha1",
        "kind": "AWSNodeTemplate",
        "metadata": {"name": name},
        "spec": {k: v for k, v in base.items() if v is not None},
    }


def make_pdb(name: str, selector: Mapping[str, str], allowed: int = 0, namespace: str = "default") -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": "1"},
        "spec": {"selector": {"matchLabels": dict(selector)}, "maxUnavailable": 0},
        "status": {"disruptionsAllowed": allowed},
    }


def badly_packed(n: int = 4) -> dict[str, list[Obj]]:
    """`n` hand-made m5.2xlarge nodes (8 CPUs, no Provisioner label), each running one 1-CPU pod."""
    nodes = [make_node(f"ng-{i}", provisioner=None, instance_type="m5.2xlarge", cpu="8", memory="32Gi",
                       finalizers=(), labels={L.ZONE: "us-west-2a"}) for i in range(n)]  # fmt: skip
    pods = [make_pod(f"web-{i}", node=f"ng-{i}", cpu="1", memory="1Gi") for i in range(n)]
    return {"nodes": nodes, "pods": pods}
