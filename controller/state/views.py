"""Kubernetes objects (plain dicts) → the immutable views of `snapshot.py`.

Pure: one function per kind, no I/O, no clock. A malformed object never raises here: its view
carries what could be read (a pod whose spec cannot be parsed gets `request=None`; a Provisioner
that fails validation gets `error`), so one bad object cannot stop the controllers. Each builder
is also isolated (`_isolated`): anything it raises — a RecursionError from a document nested
too deep, a wrong type the API server let through — yields an inert view built only from
metadata strings (a pod nobody provisions for, a PDB that allows no disruption, a Provisioner
with an `error`), logged once per resourceVersion since views are cached.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from controller.apis.errors import InvalidObjectError
from controller.apis.load import load_provisioner
from controller.apis.podgate import DEFAULT_SCHEDULER
from controller.core.labels import UNSCHEDULABLE_TAINT_KEY
from controller.core.quantity import QuantityError
from controller.core.resources import parse_resources
from controller.core.taints import taint_from_wire
from controller.core.timestamps import parse_timestamp
from controller.scheduling.pods import PodSpecError, label_selector, pod_request, same_request
from controller.scheduling.provisioners import provisioner_spec
from controller.scheduling.types import Claim, PodRequest, StorageClass, Volume
from controller.scheduling.volumeobjects import (
    read_claim,
    read_class,
    read_csinode,
    read_volume,
)
from controller.state.snapshot import NodeView, Obj, PdbView, PodView, ProvisionerView

log = logging.getLogger(__name__)

V = TypeVar("V")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


Fallback = Callable[[Obj, Mapping[str, Any], str], V]


def _isolated(fallback: Fallback[V]) -> Callable[[Callable[[Obj], V]], Callable[[Obj], V]]:
    """Build a view; on any error, the inert `fallback(obj, metadata, reason)` instead."""

    def wrap(build: Callable[[Obj], V]) -> Callable[[Obj], V]:
        @functools.wraps(build)
        def safe(obj: Obj) -> V:
            try:
                return build(obj)
            except Exception as err:  # one bad object must never stop the loops (issue 14)
                meta = obj.get("metadata") if isinstance(obj, Mapping) else None
                meta = meta if isinstance(meta, Mapping) else {}
                reason = f"{type(err).__name__}: {str(err)[:200]}"
                ns, name = _text(meta.get("namespace")), _text(meta.get("name"))
                ref = f"{ns}/{name}" if ns else name
                log.warning("cannot read %s %s: %s", build.__name__.removesuffix("_view"), ref, reason)
                return fallback(obj, meta, reason)

        return safe

    return wrap


def _inert_pod(obj: Obj, meta: Mapping[str, Any], reason: str) -> PodView:
    spec, status = obj.get("spec"), obj.get("status")
    return PodView(
        namespace=_text(meta.get("namespace")) or "default",
        name=_text(meta.get("name")),
        uid=_text(meta.get("uid")),
        node_name=_text(spec.get("nodeName")) if isinstance(spec, Mapping) else "",
        phase=_text(status.get("phase")) if isinstance(status, Mapping) else "",
        labels=_str_map(meta.get("labels")),
        annotations=_str_map(meta.get("annotations")),
        owner_kind="",
        priority_class_name="",
        deletion_timestamp=parse_timestamp(_text(meta.get("deletionTimestamp")) or None),
        created=0.0,
        unschedulable=False,
        nominated_node_name="",
        tolerates_unschedulable=False,
        request=None,
        obj=obj,
        scheduler_name="",  # unreadable: nobody's pod to wait for
    )


def _inert_node(obj: Obj, meta: Mapping[str, Any], reason: str) -> NodeView:
    spec = obj.get("spec")
    return NodeView(
        name=_text(meta.get("name")),
        provider_id=_text(spec.get("providerID")) if isinstance(spec, Mapping) else "",
        labels=_str_map(meta.get("labels")),
        annotations=_str_map(meta.get("annotations")),
        taints=(),
        capacity={},
        allocatable={},
        unschedulable=True,
        deletion_timestamp=parse_timestamp(_text(meta.get("deletionTimestamp")) or None),
        created=0.0,
        finalizers=tuple(f for f in meta.get("finalizers") or () if isinstance(f, str)),
        ready=False,
        obj=obj,
    )


def _inert_provisioner(obj: Obj, meta: Mapping[str, Any], reason: str) -> ProvisionerView:
    return ProvisionerView(
        name=_text(meta.get("name")),
        obj=obj,
        error=f"reading provisioner: {reason}",
        deleting=meta.get("deletionTimestamp") is not None,
    )


def _inert_pdb(obj: Obj, meta: Mapping[str, Any], reason: str) -> PdbView:
    return PdbView(
        namespace=_text(meta.get("namespace")) or "default",
        name=_text(meta.get("name")),
        selector=None,
        disruptions_allowed=0,
        obj=obj,
    )


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


def _each_resource(value: Any) -> dict[str, int]:
    """The readable entries of a resource list (an unreadable one is skipped, not the list)."""
    if not isinstance(value, Mapping):
        return {}
    out: dict[str, int] = {}
    for name, quantity in value.items():
        out.update(_resources({name: quantity}))
    return out


@_isolated(_inert_pod)
def pod_view(obj: Obj) -> PodView:
    return _pod_view(obj, None)


def pod_view_since(obj: Obj, previous: PodView | None) -> PodView:
    """`pod_view(obj)`, given `previous`, the view of the object held before under the pod's key:
    when `pod_request` would read the same from both (`same_request`: a status update — the mark,
    a nomination, Running — keeps the spec object, `state/trim.py`), the view takes the previous
    one's `PodRequest` and labels instead of reading the spec again (issue 21: per watch event)."""
    if previous is None or previous.request is None or not same_request(previous.obj, obj):
        return pod_view(obj)
    same = previous

    @_isolated(_inert_pod)
    def pod_view_of_status(obj: Obj) -> PodView:
        return _pod_view(obj, same)

    return pod_view_of_status(obj)


def _pod_view(obj: Obj, same: PodView | None) -> PodView:
    """A pod's view; `same`: a view whose request and labels are this pod's (`pod_view_since`)."""
    meta, spec, status = _meta(obj), obj.get("spec") or {}, obj.get("status") or {}
    owner_kind = ""
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller") or not owner_kind:
            owner_kind = str(ref.get("kind") or "")
    conditions = status.get("conditions") or []
    failed = [c for c in conditions if c.get("type") == "PodScheduled" and c.get("status") == "False"]
    marked = [c for c in failed if c.get("reason") == "Unschedulable"]
    unschedulable = bool(marked)
    stamp = marked[0].get("lastTransitionTime") if marked else None
    since = (parse_timestamp(stamp) or 0.0) if isinstance(stamp, str) else 0.0
    tolerates = any(
        (t.get("operator") == "Exists" and not t.get("key"))
        or (t.get("key") == UNSCHEDULABLE_TAINT_KEY and t.get("effect") in ("", None, "NoSchedule"))
        for t in spec.get("tolerations") or []
    )
    request: PodRequest | None = same.request if same is not None else None
    if same is None:
        try:
            request = pod_request(obj)
        except (PodSpecError, QuantityError, TypeError, ValueError) as err:
            log.debug("cannot read pod %s/%s: %s", meta.get("namespace"), meta.get("name"), err)
    return PodView(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        node_name=str(spec.get("nodeName") or ""),
        phase=str(status.get("phase") or ""),
        labels=same.labels if same is not None else _strs(meta.get("labels")),
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
        unschedulable_since=since,
        scheduling_gates=tuple(str(g.get("name")) for g in spec.get("schedulingGates") or [] if isinstance(g, Mapping)),
        scheduler_name=str(spec.get("schedulerName") or DEFAULT_SCHEDULER),
        scheduler_tried=bool(failed),
    )


@_isolated(_inert_node)
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


@_isolated(_inert_provisioner)
def provisioner_view(obj: Obj) -> ProvisionerView:
    meta = _meta(obj)
    name = str(meta.get("name") or "")
    status = obj.get("status") or {}
    common: dict[str, Any] = {
        "name": name,
        "obj": obj,
        "deleting": meta.get("deletionTimestamp") is not None,
        "status_resources": _each_resource(status.get("resources")),
    }
    try:
        # status is karpy's own output, and anything the CRD lets through there must not make
        # the Provisioner unusable: only metadata and spec are loaded (issue 14, item 6)
        loaded = load_provisioner({k: v for k, v in obj.items() if k != "status"})
        return ProvisionerView(provisioner=loaded, spec=provisioner_spec(loaded), **common)
    except InvalidObjectError as err:
        return ProvisionerView(error=str(err), **common)
    except (QuantityError, ValueError, TypeError) as err:
        return ProvisionerView(error=f"reading provisioner: {err}", **common)


@_isolated(_inert_pdb)
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


def _inert_claim(obj: Obj, meta: Mapping[str, Any], reason: str) -> Claim:
    ns, name = _text(meta.get("namespace")) or "default", _text(meta.get("name"))
    return Claim(ns, name, error=f"cannot read persistentvolumeclaim {ns}/{name}: {reason}")


def _inert_volume(obj: Obj, meta: Mapping[str, Any], reason: str) -> Volume:
    name = _text(meta.get("name"))
    return Volume(name, error=f"cannot read persistentvolume {name}: {reason}")


def _inert_class(obj: Obj, meta: Mapping[str, Any], reason: str) -> StorageClass:
    name = _text(meta.get("name"))
    return StorageClass(name, error=f"cannot read storageclass {name}: {reason}")


def _inert_csinode(obj: Obj, meta: Mapping[str, Any], reason: str) -> tuple[str, dict[str, int]]:
    return _text(meta.get("name")), {}


# The volume kinds: read by `scheduling/volumeobjects.py` (which keeps only what placement reads).
claim_view = _isolated(_inert_claim)(read_claim)
volume_view = _isolated(_inert_volume)(read_volume)
class_view = _isolated(_inert_class)(read_class)
csinode_view = _isolated(_inert_csinode)(read_csinode)
