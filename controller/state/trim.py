"""What cluster state keeps of each object it is fed: only the fields karpy reads (issue 21).

Pure. At 40,000 pods and 1,000 nodes most of an object's bytes are fields no decision, view or
dashboard page reads: `metadata.managedFields` (~40 % of a pod), the `kubectl apply` copy of the
whole object in an annotation, each container's image, command, environment, probes and mounts,
the containers' statuses, a node's list of images. `kept(kind, obj)` drops them and keeps
everything else as sent (a field not listed here is kept: forgetting to keep one would be a
decision made on half an object). The volume kinds keep only what `scheduling/volumeobjects.py`
reads.

Kept of a pod's containers (and init containers): `name`, `resources`, `ports` (host ports) and
`restartPolicy` (sidecar init containers) — what `scheduling/pods.py` reads.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.kube.resources import CLAIMS, CSINODES, NODES, PODS, STORAGECLASSES, VOLUMES
from controller.state.snapshot import Obj

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
CONTAINER_FIELDS = ("name", "resources", "ports", "restartPolicy")
POD_STATUS_DROPPED = ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
NODE_STATUS_DROPPED = ("images",)

# The volume kinds keep only what `scheduling/volumeobjects.py` reads (and their metadata).
VOLUME_FIELDS: Mapping[str, tuple[str, ...]] = {
    CLAIMS.name: ("spec", "status"),
    VOLUMES.name: ("spec", "status"),
    STORAGECLASSES.name: ("provisioner", "volumeBindingMode", "allowedTopologies"),
    CSINODES.name: ("spec",),
}


def kept(kind: str, obj: Obj) -> Obj:
    """`obj` (a `kind` of `controller.kube.resources`) as cluster state keeps it; never changes `obj`."""
    obj = _metadata_kept(obj)
    if kind == PODS.name:
        return _pod_kept(obj)
    if kind == NODES.name:
        return _without(obj, "status", NODE_STATUS_DROPPED)
    fields = VOLUME_FIELDS.get(kind)
    if fields is None:
        return obj
    out = {k: v for k, v in obj.items() if k in ("apiVersion", "kind", "metadata", *fields)}
    status = out.get("status")
    if isinstance(status, Mapping):
        out["status"] = {"phase": status.get("phase")}
    return out


def _metadata_kept(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return obj
    annotations = meta.get("annotations")
    drop_annotation = isinstance(annotations, dict) and LAST_APPLIED in annotations
    if "managedFields" not in meta and not drop_annotation:
        return obj
    meta = {k: v for k, v in meta.items() if k != "managedFields"}
    if drop_annotation and isinstance(annotations, dict):
        meta["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return {**obj, "metadata": meta}


def _pod_kept(obj: Obj) -> Obj:
    obj = _without(obj, "status", POD_STATUS_DROPPED)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return obj
    lists = [f for f in ("containers", "initContainers") if _has_dropped(spec.get(f))]
    if not lists:
        return obj  # kept already: an object is trimmed once, however often it is passed
    trimmed = dict(spec)
    for field in lists:
        trimmed[field] = [
            {k: v for k, v in c.items() if k in CONTAINER_FIELDS} if isinstance(c, dict) else c for c in spec[field]
        ]
    return {**obj, "spec": trimmed}


def _has_dropped(containers: object) -> bool:
    return isinstance(containers, list) and any(
        isinstance(c, dict) and any(k not in CONTAINER_FIELDS for k in c) for c in containers
    )


def _without(obj: Obj, part: str, dropped: tuple[str, ...]) -> Obj:
    section = obj.get(part)
    if not isinstance(section, dict) or not any(k in section for k in dropped):
        return obj
    return {**obj, part: {k: v for k, v in section.items() if k not in dropped}}
