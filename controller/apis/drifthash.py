"""Drift hashes: what a Provisioner and an AWSNodeTemplate put into every node they launch.

Pure. Karpenter v0.31 stamps each node it launches with a hash of the owner's *static* fields
(`karpenter.sh/provisioner-hash`, `karpenter.k8s.aws/nodetemplate-hash`) and calls the node
drifted when the owner's hash moves on (spec §6.5; Karpenter's `designs/drift.md`). The static
fields are those that shape the node as launched:

- Provisioner: labels, annotations, taints, startupTaints, kubeletConfiguration. Not hashed:
  requirements (checked against the node's labels instead: `requirements_drifted`), weight,
  limits, TTLs, consolidation (they shape no node), providerRef / provider (the template has
  its own hash);
- AWSNodeTemplate: amiFamily, context, instanceProfile, tags, metadataOptions,
  blockDeviceMappings, userData, detailedMonitoring. Not hashed: the subnet, security group and
  AMI selectors and launchTemplate (what they select is checked against the instance by the
  cloud provider: `CloudProvider.is_drifted`).

karpy decisions, so that a karpy upgrade does not drift a fleet: the hash is SHA-256 over a
canonical JSON form (keys sorted; lists that are sets — taints, block devices — sorted; absent,
empty and default values dropped, so a field karpy learns later changes no existing hash;
quantities and durations normalised, `1Gi` = `1024Mi`); each hash is stamped with the version
of that form (`karpy.sh/provisioner-hash-version`, `karpy.sh/nodetemplate-hash-version`), and a
node stamped by another version — or not at all, e.g. launched by Karpenter or an older karpy —
is never drifted by its hash (`static_drift`). Neighbours: `controller/deprovisioning/drift.py`
(the checks), `controller/cloudprovider/drift.py` (the cloud's).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.apis.provisioner import KubeletConfiguration, Provisioner
from controller.core import labels as L
from controller.core.quantity import QuantityError, parse_duration, parse_quantity
from controller.core.taints import Taint

PROVISIONER_HASH_VERSION = "v1"
NODE_TEMPLATE_HASH_VERSION = "v1"


def _digest(doc: Mapping[str, Any]) -> str:
    """A decimal 64-bit number (the look of Karpenter's hashes) of the canonical JSON of `doc`."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return str(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))


def _quantity(text: str) -> str:
    try:
        return format(parse_quantity(text).normalize(), "f")
    except (QuantityError, ArithmeticError):
        return text


def _duration(text: str) -> str:
    try:
        return format(parse_duration(text).normalize(), "f")
    except (QuantityError, ArithmeticError):
        return text


def _taints(taints: Iterable[Taint]) -> list[list[str]]:
    return [list(t) for t in sorted({(t.key, t.value, t.effect) for t in taints})]


def _kubelet(kubelet: KubeletConfiguration | None) -> dict[str, Any]:
    if kubelet is None:
        return {}
    wire = kubelet.to_wire()  # None, [] and {} already dropped
    for key in ("systemReserved", "kubeReserved"):
        if key in wire:
            wire[key] = {k: _quantity(str(v)) for k, v in wire[key].items()}
    if "evictionSoftGracePeriod" in wire:
        wire["evictionSoftGracePeriod"] = {k: _duration(str(v)) for k, v in wire["evictionSoftGracePeriod"].items()}
    return wire


def provisioner_static_fields(provisioner: Provisioner) -> dict[str, Any]:
    """The canonical form of what a Provisioner stamps on its nodes (see the module docstring)."""
    doc: dict[str, Any] = {
        "labels": dict(provisioner.labels),
        "annotations": dict(provisioner.annotations),
        "taints": _taints(provisioner.taints),
        "startupTaints": _taints(provisioner.startup_taints),
        "kubeletConfiguration": _kubelet(provisioner.kubelet),
    }
    return {k: v for k, v in doc.items() if v}


def provisioner_hash(provisioner: Provisioner) -> str:
    return _digest(provisioner_static_fields(provisioner))


def _drop_empty(value: Any) -> Any:
    if isinstance(value, Mapping):
        out = {str(k): _drop_empty(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", [], {})}
    if isinstance(value, (list, tuple)):
        return [_drop_empty(v) for v in value]
    return value


def _block_device(mapping: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = _drop_empty(mapping)
    ebs = out.get("ebs")
    if isinstance(ebs, dict) and "volumeSize" in ebs:
        ebs["volumeSize"] = _quantity(str(ebs["volumeSize"]))
    return out


def node_template_static_fields(template: AWSNodeTemplate) -> dict[str, Any]:
    """The canonical form of what an AWSNodeTemplate stamps on its nodes (see the module docstring)."""
    devices = [_block_device(m) for m in template.block_device_mappings]
    doc: dict[str, Any] = {
        "amiFamily": template.ami_family,
        "context": template.context,
        "instanceProfile": template.instance_profile,
        "tags": dict(template.tags),
        "metadataOptions": _drop_empty(template.metadata_options or {}),
        "blockDeviceMappings": sorted(devices, key=lambda d: json.dumps(d, sort_keys=True)),
        "userData": template.user_data,
        "detailedMonitoring": template.detailed_monitoring,
    }
    return {k: v for k, v in doc.items() if v not in (None, "", [], {}, False)}


def node_template_hash(template: AWSNodeTemplate) -> str:
    return _digest(node_template_static_fields(template))


def provisioner_hash_annotations(provisioner: Provisioner) -> dict[str, str]:
    """The annotations every node of `provisioner` is launched with."""
    return {L.PROVISIONER_HASH: provisioner_hash(provisioner), L.PROVISIONER_HASH_VERSION: PROVISIONER_HASH_VERSION}


def node_template_hash_annotations(template: AWSNodeTemplate) -> dict[str, str]:
    """The annotations every node made from `template` is launched with."""
    return {
        L.NODE_TEMPLATE_HASH: node_template_hash(template),
        L.NODE_TEMPLATE_HASH_VERSION: NODE_TEMPLATE_HASH_VERSION,
    }


class HashState(StrEnum):
    """How a node's stamped hash compares with its owner's current one."""

    SAME = "same"
    DRIFTED = "drifted"
    UNSTAMPED = "unstamped"  # no hash on the node (launched by Karpenter or an older karpy): never drifted
    RESTAMP = "restamp"  # stamped by another version of the canonical form: not drifted, re-stamped


def static_drift(node_annotations: Mapping[str, str], current: Mapping[str, str]) -> HashState:
    """Compare a node's stamp with `current` (`*_hash_annotations()` of its owner now)."""
    (hash_key, now_hash), (version_key, now_version) = current.items()
    stamped = node_annotations.get(hash_key)
    if stamped is None:
        return HashState.UNSTAMPED
    if node_annotations.get(version_key) != now_version:
        return HashState.RESTAMP
    return HashState.SAME if stamped == now_hash else HashState.DRIFTED
