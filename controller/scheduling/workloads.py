"""Workload documents → the pods they would create (`karpy simulate`, provisioning, deprovisioning).

Pure. Deployments, ReplicaSets and StatefulSets give `replicas` pods (default 1), Jobs give
`parallelism` pods (default 1, at most `completions`), each named `<owner>-<i>` (i from 0) in
the owner's namespace, with the template's labels and spec and an ownerReference to the owner.
A DaemonSet gives one template pod, named after the DaemonSet in its namespace and owned by it
(the scheduler counts it as overhead on every node it would run on); `daemonset_pods()` is the
one DaemonSet → `PodRequest` converter the controllers use, skipping unreadable DaemonSets.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from controller.core.quantity import QuantityError
from controller.scheduling.pods import PodSpecError, pod_request
from controller.scheduling.types import PodRequest

log = logging.getLogger(__name__)

REPLICATED = ("Deployment", "ReplicaSet", "StatefulSet")
WORKLOAD_KINDS = (*REPLICATED, "Job", "DaemonSet")


def _template(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = doc.get("spec")
    if not isinstance(spec, Mapping):
        raise PodSpecError("spec: required")
    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise PodSpecError("spec.template: required")
    return template


def replica_count(doc: Mapping[str, Any]) -> int:
    """How many pods a workload gives (raises PodSpecError when its count is not usable)."""
    spec = doc.get("spec") or {}
    kind = doc.get("kind")
    field = "parallelism" if kind == "Job" else "replicas"
    value = spec.get(field, 1)
    if value is None:
        value = 1
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PodSpecError(f"spec.{field}: expected a non-negative integer, got {value!r}")
    completions = spec.get("completions")
    if kind == "Job" and isinstance(completions, int):
        value = min(value, completions)
    return int(value)


def _pod(doc: Mapping[str, Any], name: str) -> dict[str, Any]:
    meta = doc.get("metadata") or {}
    template = _template(doc)
    template_meta = template.get("metadata") or {}
    pod_meta: dict[str, Any] = {
        "name": name,
        "namespace": meta.get("namespace") or "default",
        "labels": dict(template_meta.get("labels") or {}),
        "annotations": dict(template_meta.get("annotations") or {}),
        "ownerReferences": [{"kind": doc.get("kind"), "name": meta.get("name"), "controller": True}],
    }
    if meta.get("creationTimestamp"):
        pod_meta["creationTimestamp"] = meta["creationTimestamp"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": copy.deepcopy(template.get("spec") or {})}


def expand(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The pods a Deployment/ReplicaSet/StatefulSet/Job creates (PodSpecError when malformed)."""
    name = str((doc.get("metadata") or {}).get("name") or "")
    if not name:
        raise PodSpecError("metadata.name: required")
    return [_pod(doc, f"{name}-{i}") for i in range(replica_count(doc))]


def daemonset_pod(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The pod a DaemonSet runs on each node (named after the DaemonSet)."""
    name = str((doc.get("metadata") or {}).get("name") or "")
    if not name:
        raise PodSpecError("metadata.name: required")
    return _pod(doc, name)


def daemonset_pods(docs: Iterable[Mapping[str, Any]]) -> list[PodRequest]:
    """The template pod of every readable DaemonSet (an unreadable one is logged and skipped)."""
    out = []
    for doc in docs:
        try:
            out.append(pod_request(daemonset_pod(doc)))
        except (PodSpecError, QuantityError, TypeError, ValueError) as err:
            meta = doc.get("metadata") or {}
            log.debug("cannot read daemonset %s/%s: %s", meta.get("namespace"), meta.get("name"), err)
    return out
