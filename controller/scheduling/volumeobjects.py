"""PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes as the scheduler reads them.

A volume's node constraint is its `spec.nodeAffinity` ANDed with its zone and region labels
(kube-scheduler's VolumeBinding and VolumeZone plugins).

Pure: plain dicts (as the API server or a YAML file gives them) → small frozen views, keeping
only what `volumes.py` decides with. A reader never raises: an object it cannot read becomes a
view whose `error` says why, and a pod using it waits with that reason (one bad object must not
stop provisioning). The views (`Claim`, `Volume`, `StorageClass`, `VolumeObjects`) are in `types.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.core.labels import REGION, ZONE, normalize_key
from controller.core.quantity import QuantityError, parse_quantity
from controller.core.requirements import Requirement
from controller.scheduling.pods import PodSpecError, label_selector
from controller.scheduling.types import Claim, StorageClass, Terms, Volume

DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)
SELECTED_NODE = "volume.kubernetes.io/selected-node"
EBS_DRIVER = "ebs.csi.aws.com"
ZONE_KEYS = (ZONE, "failure-domain.beta.kubernetes.io/zone")
REGION_KEYS = (REGION, "failure-domain.beta.kubernetes.io/region")


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _strs(value: Any) -> frozenset[str]:
    return frozenset(str(v) for v in value) if isinstance(value, list) else frozenset()


def _storage(value: Any) -> int:
    if value is None:
        return 0
    return int(parse_quantity(str(value)))


def _meta(obj: Mapping[str, Any]) -> tuple[Mapping[str, Any], str, str]:
    meta = _map(obj.get("metadata"))
    return meta, str(meta.get("namespace") or "default"), str(meta.get("name") or "")


def node_selector_terms(terms: Any, path: str) -> Terms:
    """NodeSelectorTerms → ORed requirement tuples (an empty term, which matches no node, is
    dropped). `matchFields` on `metadata.name` reads as the node's hostname label (karpy's nodes
    carry their name there)."""
    out = []
    for i, term in enumerate(terms if isinstance(terms, list) else []):
        reqs = []
        term = _map(term)
        for j, expr in enumerate(term.get("matchExpressions") or []):
            expr = _map(expr)
            try:
                key = str(expr.get("key") or "")
                reqs.append(Requirement.new(key, str(expr.get("operator") or ""), expr.get("values") or []))
            except ValueError as err:
                raise PodSpecError(f"{path}[{i}].matchExpressions[{j}]: {err}") from err
        for expr in term.get("matchFields") or []:
            expr = _map(expr)
            if expr.get("key") != "metadata.name":
                raise PodSpecError(f"{path}[{i}].matchFields: only metadata.name is supported")
            reqs.append(Requirement.new("kubernetes.io/hostname", str(expr.get("operator")), expr.get("values") or []))
        if reqs:  # an empty term matches no node
            out.append(tuple(reqs))
    return tuple(out)


def _label_terms(labels: Mapping[str, str]) -> tuple[Requirement, ...]:
    """kube-scheduler's VolumeZone: a volume's zone and region labels (several zones joined by
    `__`) must match the node's."""
    out = []
    for key in (*ZONE_KEYS, *REGION_KEYS):
        if labels.get(key):
            out.append(Requirement.new(key, "In", labels[key].split("__")))
    return tuple(out)


def read_claim(obj: Mapping[str, Any]) -> Claim:
    meta, namespace, name = _meta(obj)
    try:
        spec, status = _map(obj.get("spec")), _map(obj.get("status"))
        cls = spec.get("storageClassName")
        owners = frozenset(str(ref.get("uid")) for ref in meta.get("ownerReferences") or [] if isinstance(ref, Mapping))
        return Claim(
            namespace=namespace,
            name=name,
            uid=str(meta.get("uid") or ""),
            class_name=None if cls is None else str(cls),
            volume_name=str(spec.get("volumeName") or ""),
            phase=str(status.get("phase") or ""),
            access_modes=_strs(spec.get("accessModes")),
            storage=_storage(_map(_map(spec.get("resources")).get("requests")).get("storage")),
            selector=label_selector(spec.get("selector"), "spec.selector"),
            volume_mode=str(spec.get("volumeMode") or "Filesystem"),
            deleting=meta.get("deletionTimestamp") is not None,
            owner_uids=owners,
        )
    except (PodSpecError, QuantityError, TypeError, ValueError, AttributeError) as err:
        return Claim(namespace, name, error=f"cannot read persistentvolumeclaim {namespace}/{name}: {err}")


def read_volume(obj: Mapping[str, Any]) -> Volume:
    meta, _, name = _meta(obj)
    try:
        spec, status = _map(obj.get("spec")), _map(obj.get("status"))
        ref = _map(spec.get("claimRef"))
        claim_ref = (str(ref.get("namespace") or ""), str(ref.get("name") or ""), str(ref.get("uid") or ""))
        required = _map(_map(spec.get("nodeAffinity")).get("required"))
        terms = node_selector_terms(required.get("nodeSelectorTerms"), "spec.nodeAffinity.required")
        labels = {str(k): str(v) for k, v in _map(meta.get("labels")).items()}
        pinned = _label_terms(labels)
        if pinned:
            terms = tuple(term + pinned for term in terms) if terms else (pinned,)
        named = [
            str(_map(e).get("key") or "")
            for t in required.get("nodeSelectorTerms") or []
            for e in _map(t).get("matchExpressions") or []
        ]
        aliased = frozenset(k for k in (*named, *labels) if normalize_key(k) != k)
        driver = str(_map(spec.get("csi")).get("driver") or "")
        if not driver and spec.get("awsElasticBlockStore") is not None:
            driver = EBS_DRIVER
        return Volume(
            name=name,
            class_name=str(spec.get("storageClassName") or ""),
            phase=str(status.get("phase") or ""),
            claim_ref=claim_ref if ref else None,
            access_modes=_strs(spec.get("accessModes")),
            storage=_storage(_map(spec.get("capacity")).get("storage")),
            volume_mode=str(spec.get("volumeMode") or "Filesystem"),
            labels=labels,
            terms=terms,
            anywhere=not required.get("nodeSelectorTerms") and not pinned,
            driver=driver,
            deleting=meta.get("deletionTimestamp") is not None,
            aliased_keys=aliased,
        )
    except (PodSpecError, QuantityError, TypeError, ValueError, AttributeError) as err:
        return Volume(name, error=f"cannot read persistentvolume {name}: {err}")


def read_class(obj: Mapping[str, Any]) -> StorageClass:
    meta, _, name = _meta(obj)
    try:
        terms = []
        for i, term in enumerate(obj.get("allowedTopologies") or []):
            reqs = tuple(
                Requirement.new(str(_map(e).get("key") or ""), "In", _map(e).get("values") or [])
                for e in _map(term).get("matchLabelExpressions") or []
            )
            if not reqs:
                raise PodSpecError(f"allowedTopologies[{i}]: a term without matchLabelExpressions")
            terms.append(reqs)
        annotations = _map(meta.get("annotations"))
        return StorageClass(
            name=name,
            provisioner=str(obj.get("provisioner") or ""),
            wait_for_first_consumer=obj.get("volumeBindingMode") == "WaitForFirstConsumer",
            allowed=tuple(terms),
            default=any(annotations.get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS),
            created=str(meta.get("creationTimestamp") or ""),
        )
    except (PodSpecError, TypeError, ValueError, AttributeError) as err:
        return StorageClass(name, error=f"cannot read storageclass {name}: {err}")


def read_csinode(obj: Mapping[str, Any]) -> tuple[str, dict[str, int]]:
    """(node name, CSI driver → allocatable count) — drivers without a count are not limited."""
    _, _, name = _meta(obj)
    limits = {}
    for driver in _map(obj.get("spec")).get("drivers") or []:
        driver = _map(driver)
        count = _map(driver.get("allocatable")).get("count")
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0 and driver.get("name"):
            limits[str(driver["name"])] = count
    return name, limits
