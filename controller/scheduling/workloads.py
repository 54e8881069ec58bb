"""Workload documents → the pods they would create (`karpy simulate`, provisioning, deprovisioning).

Pure. Deployments, ReplicaSets and StatefulSets give `replicas` pods (default 1), Jobs give
`parallelism` pods (default 1, at most `completions`), each named `<owner>-<i>` (i from 0) in
the owner's namespace, with the template's labels and spec and an ownerReference to the owner.
A DaemonSet gives one template pod, named after the DaemonSet in its namespace and owned by it
(the scheduler counts it as overhead on every node it would run on); `daemonset_pods()` is the
one DaemonSet → `PodRequest` converter the controllers use, skipping unreadable DaemonSets.
`claims()` gives the PersistentVolumeClaims a pod's StatefulSet and generic ephemeral volumes
would create (for `karpy simulate`, where no controller creates them).
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
    """The pods a Deployment/ReplicaSet/StatefulSet/Job creates (PodSpecError when malformed);
    a StatefulSet's pods mount their claims `<template>-<pod>` (see `claims`)."""
    name = str((doc.get("metadata") or {}).get("name") or "")
    if not name:
        raise PodSpecError("metadata.name: required")
    pods = [_pod(doc, f"{name}-{i}") for i in range(replica_count(doc))]
    for pod in pods:
        for template in _claim_templates(doc):
            claim = f"{template['metadata']['name']}-{pod['metadata']['name']}"
            volume = {"name": template["metadata"]["name"], "persistentVolumeClaim": {"claimName": claim}}
            pod["spec"]["volumes"] = [*(pod["spec"].get("volumes") or []), volume]
    return pods


def _claim_templates(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    if doc.get("kind") != "StatefulSet":
        return []
    out = []
    templates = (doc.get("spec") or {}).get("volumeClaimTemplates") or []
    if not isinstance(templates, list):
        raise PodSpecError("spec.volumeClaimTemplates: expected a list")
    for i, template in enumerate(templates):
        if not isinstance(template, Mapping) or not (template.get("metadata") or {}).get("name"):
            raise PodSpecError(f"spec.volumeClaimTemplates[{i}].metadata.name: required")
        out.append(template)
    return out


def claims(pod: Mapping[str, Any], doc: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The claims that would be created for a pod: its StatefulSet's (`doc`) claim templates and
    its generic ephemeral volumes' (`<pod>-<volume>`, owned by the pod), as the StatefulSet and
    ephemeral volume controllers make them."""
    meta = pod.get("metadata") or {}
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "default")
    out = []
    for template in _claim_templates(doc or {}):
        claim_name = f"{template['metadata']['name']}-{name}"
        out.append({"metadata": {"name": claim_name, "namespace": namespace}, "spec": dict(template.get("spec") or {})})
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        ephemeral = volume.get("ephemeral") if isinstance(volume, Mapping) else None
        if isinstance(ephemeral, Mapping):
            spec = dict((ephemeral.get("volumeClaimTemplate") or {}).get("spec") or {})
            owner = [{"kind": "Pod", "name": name, "uid": str(meta.get("uid") or ""), "controller": True}]
            claim_meta = {"name": f"{name}-{volume.get('name')}", "namespace": namespace, "ownerReferences": owner}
            out.append({"metadata": claim_meta, "spec": spec})
    return out


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
