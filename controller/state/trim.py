"""What cluster state keeps of each object it is fed: only the fields karpy reads (issue 21).

Pure. At 40,000 pods and 1,000 nodes most of an object's bytes are fields no decision, view or
dashboard page reads: `metadata.managedFields` (~40 % of a pod), the `kubectl apply` copy of the
whole object in an annotation, each container's image, command, environment, probes and mounts,
the containers' statuses, a node's list of images. `kept(kind, obj)` drops them and keeps
everything else as sent (a field not listed here is kept: forgetting to keep one would be a
decision made on half an object). The volume kinds keep only what `scheduling/volumeobjects.py`
reads.

Kept of a pod's containers (and init containers): `name`, `resources`, `ports` (host ports) and
`restartPolicy` (sidecar init containers) — what `scheduling/pods.py` reads; of its volumes, those
that name a claim (`persistentVolumeClaim`, `ephemeral`), the only ones it reads (the service
account's projected volume every pod carries is a third of what is left of a pod).

What is kept is then compacted: rebuilt with every key and every string of up to
`INTERNED_LENGTH` characters interned (`sys.intern`), so the 40,000 pods' "metadata",
"PodScheduled", "Burstable", namespace and label strings are one object each instead of one per
pod (each watch event is decoded on its own, so nothing is shared otherwise): a pod as the API
server sends it is ~12 KB of Python objects once trimmed, ~5 KB compacted. The result is a
`Kept`, a dict that `kept` returns as it is, so an object is trimmed once however often it passes.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

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
CLAIM_VOLUME_FIELDS = ("persistentVolumeClaim", "ephemeral")  # a pod volume `scheduling/pods.py` reads
# Built-in kinds whose fields have one type each, so an equal part is the same part (1 == True in
# Python; a custom resource's free-form field could change from one to the other)
SHARED_KINDS = frozenset({PODS.name, NODES.name})
INTERNED_LENGTH = 64
COMPACTED_DEPTH = 64  # deeper parts are kept as sent (no recursion limit to reach)


class Kept(dict[str, Any]):
    """An object as cluster state keeps it (trimmed and compacted)."""


def kept(kind: str, obj: Obj, previous: Obj | None = None) -> Obj:
    """`obj` (a `kind` of `controller.kube.resources`) as cluster state keeps it; never changes
    `obj`; a `Kept` is returned as it is. `previous`: the pod or node kept before under the same
    key — each part of `obj` equal to the same part of it (a pod's `spec` through every status
    update: kube-scheduler's mark, a nomination, kwok's Running; its labels and owner references)
    is that part, not compacted again, so readers can tell an unchanged part by identity
    (`state/views.py` `pod_view_since`). Only for `SHARED_KINDS`, whose every field has one type."""
    if isinstance(obj, Kept):
        return obj
    trimmed = _trimmed(kind, obj)
    if kind in SHARED_KINDS and isinstance(previous, Kept):
        return Kept(_compacted_like(trimmed, previous, 0))
    return Kept(_compacted(trimmed, 0))


def _compacted_like(value: Mapping[str, Any], held: Mapping[str, Any], depth: int) -> dict[str, Any]:
    """`_compacted(value, depth)`, with each entry equal to `held`'s under the same key being
    `held`'s (a mapping that differs is compared the same way, one level down)."""
    out = {}
    for key, part in value.items():
        before = held.get(key, _ABSENT)
        if _equal(before, part):
            kept_part = before
        elif isinstance(part, Mapping) and isinstance(before, dict) and depth + 1 < COMPACTED_DEPTH:
            kept_part = _compacted_like(part, before, depth + 1)
        else:
            kept_part = _compacted(part, depth + 1)
        out[sys.intern(key) if type(key) is str else key] = kept_part
    return out


_ABSENT = object()


def _equal(before: Any, part: Any) -> bool:
    """`before == part`; a part nested too deep to compare is taken as changed (compacted anew)."""
    try:
        return bool(before == part)
    except RecursionError:
        return False


def _trimmed(kind: str, obj: Obj) -> Obj:
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


def _compacted(value: Any, depth: int) -> Any:
    """`value` rebuilt with its keys and short strings interned (see the module docstring)."""
    if type(value) is str:
        return sys.intern(value) if len(value) <= INTERNED_LENGTH else value
    if depth >= COMPACTED_DEPTH:
        return value
    if isinstance(value, Mapping):
        return {(sys.intern(k) if type(k) is str else k): _compacted(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_compacted(v, depth + 1) for v in value]
    return value


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
    trimmed = dict(spec)
    for field in ("containers", "initContainers"):
        containers = spec.get(field)
        if isinstance(containers, list):
            trimmed[field] = [
                {k: v for k, v in c.items() if k in CONTAINER_FIELDS} if isinstance(c, dict) else c for c in containers
            ]
    volumes = spec.get("volumes")
    if isinstance(volumes, list):
        trimmed["volumes"] = [v for v in volumes if not isinstance(v, dict) or any(k in v for k in CLAIM_VOLUME_FIELDS)]
    return {**obj, "spec": trimmed}


def _without(obj: Obj, part: str, dropped: tuple[str, ...]) -> Obj:
    section = obj.get(part)
    if not isinstance(section, dict) or not any(k in section for k in dropped):
        return obj
    return {**obj, part: {k: v for k, v in section.items() if k not in dropped}}
