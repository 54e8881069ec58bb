"""Kubernetes objects (plain dicts) → the immutable views of `snapshot.py`.

Pure: one function per kind, no I/O, no clock. A malformed object never raises here: its view
carries what could be read (a pod whose spec cannot be parsed gets `request=None`; a Provisioner
that fails validation gets `error`), so one bad object cannot stop the controllers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from controller.apis.errors import InvalidObjectError
from controller.apis.load import load_provisioner
from controller.core.labels import UNSCHEDULABLE_TAINT_KEY
from controller.core.quantity import QuantityError
from controller.core.resources import parse_resources
from controller.core.taints import taint_from_wire
from controller.core.timestamps import parse_timestamp
from controller.scheduling.pods import PodSpecError, label_selector, pod_request
from controller.scheduling.provisioners import provisioner_spec
from controller.scheduling.types import PodRequest
from controller.state.snapshot import NodeView, Obj, PdbView, PodView, ProvisionerView

log = logging.getLogger(__name__)


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _strs(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def _resources(value: Any) -> dict[str, int]:
    try:
        return parse_resources(value if isinstance(value, Mapping) else {})
    except QuantityError:
        return {}


def pod_view(obj: Obj) -> PodView:
    meta, spec, status = _meta(obj), obj.get("spec") or {}, obj.get("status") or {}
    owner_kind = ""
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller") or not owner_kind:
            owner_kind = str(ref.get("kind") or "")
    unschedulable = any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
        for c in status.get("conditions") or []
    )
    tolerates = any(
        (t.get("operator") == "Exists" and not t.get("key"))
        or (t.get("key") == UNSCHEDULABLE_TAINT_KEY and t.get("effect") in ("", None, "NoSchedule"))
        for t in spec.get("tolerations") or []
    )
    request: PodRequest | None
    try:
        request = pod_request(obj)
    except (PodSpecError, QuantityError, TypeError, ValueError) as err:
        log.debug("cannot read pod %s/%s: %s", meta.get("namespace"), meta.get("name"), err)
        request = None
    return PodView(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        node_name=str(spec.get("nodeName") or ""),
        phase=str(status.get("phase") or ""),
        labels=_strs(meta.get("labels")),
        annotations=_strs(meta.get("annotations")),
        owner_kind=owner_kind,
        priority_class_name=str(spec.get("priorityClassName") or ""),
        deletion_timestamp=parse_timestamp(meta.get("deletionTimestamp")),
        created=parse_timestamp(meta.get("creationTimestamp")) or 0.0,
        unschedulable=unschedulable,
        nominated_node_name=str(status.get("nominatedNodeName") or ""),
        tolerates_unschedulable=tolerates,
        request=request,
        obj=obj,
    )


def node_view(obj: Obj) -> NodeView:
    meta, spec, status = _meta(obj), obj.get("spec") or {}, obj.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    return NodeView(
        name=str(meta.get("name") or ""),
        provider_id=str(spec.get("providerID") or ""),
        labels=_strs(meta.get("labels")),
        annotations=_strs(meta.get("annotations")),
        taints=tuple(taint_from_wire(t) for t in spec.get("taints") or []),
        capacity=_resources(status.get("capacity")),
        allocatable=_resources(status.get("allocatable")),
        unschedulable=bool(spec.get("unschedulable")),
        deletion_timestamp=parse_timestamp(meta.get("deletionTimestamp")),
        created=parse_timestamp(meta.get("creationTimestamp")) or 0.0,
        finalizers=tuple(str(f) for f in meta.get("finalizers") or []),
        ready=ready,
        obj=obj,
    )


def provisioner_view(obj: Obj) -> ProvisionerView:
    meta = _meta(obj)
    name = str(meta.get("name") or "")
    status = obj.get("status") or {}
    common: dict[str, Any] = {
        "name": name,
        "obj": obj,
        "deleting": meta.get("deletionTimestamp") is not None,
        "status_resources": _resources(status.get("resources")),
    }
    try:
        loaded = load_provisioner(dict(obj))
        return ProvisionerView(provisioner=loaded, spec=provisioner_spec(loaded), **common)
    except InvalidObjectError as err:
        return ProvisionerView(error=str(err), **common)
    except (QuantityError, ValueError, TypeError) as err:
        return ProvisionerView(error=f"reading provisioner: {err}", **common)


def pdb_view(obj: Obj) -> PdbView:
    meta, spec, status = _meta(obj), obj.get("spec") or {}, obj.get("status") or {}
    try:
        selector = label_selector(spec.get("selector"), "spec.selector")
    except (PodSpecError, TypeError, ValueError):
        selector = None
    return PdbView(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        selector=selector,
        disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
        obj=obj,
    )
