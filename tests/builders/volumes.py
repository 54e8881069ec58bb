"""Builders for volume tests: claims, volumes, storage classes and CSINodes in their wire form,
read through `controller/scheduling/volumeobjects.py` as cluster state reads them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from controller.core.labels import ZONE
from controller.scheduling.types import ClaimRef, PodRequest, VolumeObjects
from controller.scheduling.volumeobjects import read_claim, read_class, read_csinode, read_volume

DRIVER = "ebs.csi.aws.com"
WFFC = "WaitForFirstConsumer"


def claim(
    name: str,
    *,
    namespace: str = "default",
    storage_class: str | None = "standard",
    volume: str = "",
    storage: str = "1Gi",
    access_modes: Sequence[str] = ("ReadWriteOnce",),
    selector: Mapping[str, Any] | None = None,
    owner_uid: str = "",
    deleting: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if owner_uid:
        meta["ownerReferences"] = [{"kind": "Pod", "name": "p", "uid": owner_uid, "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec: dict[str, Any] = {"accessModes": list(access_modes), "resources": {"requests": {"storage": storage}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume:
        spec["volumeName"] = volume
    if selector is not None:
        spec["selector"] = selector
    return {"metadata": meta, "spec": spec, "status": {"phase": "Bound" if volume else "Pending"}}


def zone_affinity(*zones: str, key: str = ZONE) -> list[list[dict[str, Any]]]:
    return [[{"key": key, "operator": "In", "values": list(zones)}]]


def volume(
    name: str,
    *,
    terms: Sequence[Sequence[Mapping[str, Any]]] | None = None,
    storage_class: str = "standard",
    storage: str = "10Gi",
    access_modes: Sequence[str] = ("ReadWriteOnce",),
    claim_ref: tuple[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    driver: str = DRIVER,
    phase: str = "",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "storageClassName": storage_class,
        "capacity": {"storage": storage},
        "accessModes": list(access_modes),
        "csi": {"driver": driver, "volumeHandle": name},
    }
    if terms is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]}}
    if claim_ref is not None:
        spec["claimRef"] = {"namespace": claim_ref[0], "name": claim_ref[1]}
    phase = phase or ("Bound" if claim_ref else "Available")
    return {"metadata": {"name": name, "labels": dict(labels or {})}, "spec": spec, "status": {"phase": phase}}


def storage_class(
    name: str = "standard",
    *,
    provisioner: str = DRIVER,
    mode: str = WFFC,
    zones: Sequence[str] = (),
    default: bool = False,
    created: str = "2024-01-01T00:00:00Z",
) -> dict[str, Any]:
    meta = {"name": name, "creationTimestamp": created}
    obj: dict[str, Any] = {"metadata": meta, "provisioner": provisioner, "volumeBindingMode": mode}
    if zones:
        obj["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": list(zones)}]}]
    if default:
        obj["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    return obj


def csinode(node: str, count: int, driver: str = DRIVER) -> dict[str, Any]:
    return {"metadata": {"name": node}, "spec": {"drivers": [{"name": driver, "allocatable": {"count": count}}]}}


def objects(
    claims: Iterable[Mapping[str, Any]] = (),
    volumes: Iterable[Mapping[str, Any]] = (),
    classes: Iterable[Mapping[str, Any]] = (),
    csinodes: Iterable[Mapping[str, Any]] = (),
) -> VolumeObjects:
    read = [read_claim(c) for c in claims]
    return VolumeObjects(
        claims={c.key: c for c in read},
        volumes={v.name: v for v in map(read_volume, volumes)},
        classes={c.name: c for c in map(read_class, classes)},
        node_limits=dict(map(read_csinode, csinodes)),
    )


def with_claims(pod: PodRequest, *names: str, ephemeral: bool = False) -> PodRequest:
    return dataclasses.replace(pod, claims=tuple(ClaimRef(n, ephemeral) for n in names))
