"""Adapter: the API's `Provisioner` → the scheduler's `ProvisionerSpec`.

Pure. The one place where the typed API object (already defaulted and validated by
`controller.apis.load`) is turned into scheduling terms (spec §5.3): requirements = spec
requirements ∩ each label as `In [value]` ∩ `karpenter.sh/provisioner-name In [name]`; limits
and reserved resources as integers; the kubelet fields that change capacity or overhead; the
annotations of its nodes: its own plus the hash of its static fields (`apis/drifthash.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from controller.apis.drifthash import provisioner_hash_annotations
from controller.apis.provisioner import KubeletConfiguration, Provisioner
from controller.core.labels import PROVISIONER_NAME
from controller.core.requirements import IN, Requirement, Requirements
from controller.core.resources import parse_resources
from controller.scheduling.types import KubeletSpec, ProvisionerSpec


def kubelet_spec(kubelet: KubeletConfiguration | None) -> KubeletSpec | None:
    if kubelet is None:
        return None
    spec = KubeletSpec(
        max_pods=kubelet.max_pods,
        pods_per_core=kubelet.pods_per_core,
        system_reserved=parse_resources(kubelet.system_reserved),
        kube_reserved=parse_resources(kubelet.kube_reserved),
        eviction_hard=dict(kubelet.eviction_hard),
        eviction_soft=dict(kubelet.eviction_soft),
        eviction_soft_grace_period=dict(kubelet.eviction_soft_grace_period),
        eviction_max_pod_grace_period=kubelet.eviction_max_pod_grace_period,
        cluster_dns=tuple(kubelet.cluster_dns),
        container_runtime=kubelet.container_runtime,
        image_gc_high_threshold_percent=kubelet.image_gc_high_threshold_percent,
        image_gc_low_threshold_percent=kubelet.image_gc_low_threshold_percent,
        cpu_cfs_quota=kubelet.cpu_cfs_quota,
    )
    return None if spec == KubeletSpec() else spec


def template_requirements(name: str, wire: Iterable[Mapping[str, object]], labels: Mapping[str, str]) -> Requirements:
    reqs = Requirements.from_wire(wire)
    for key, value in labels.items():
        reqs.add(Requirement.new(key, IN, [value]))
    reqs.add(Requirement.new(PROVISIONER_NAME, IN, [name]))
    return reqs


def provisioner_spec(provisioner: Provisioner) -> ProvisionerSpec:
    """The scheduling view of one defaulted, validated Provisioner."""
    return ProvisionerSpec(
        name=provisioner.name,
        requirements=template_requirements(
            provisioner.name, [r.to_wire() for r in provisioner.requirements], provisioner.labels
        ),
        weight=provisioner.weight or 0,
        labels=dict(provisioner.labels),
        annotations={**provisioner.annotations, **provisioner_hash_annotations(provisioner)},
        taints=provisioner.taints,
        startup_taints=provisioner.startup_taints,
        kubelet=kubelet_spec(provisioner.kubelet),
        limits=parse_resources(provisioner.limits),
    )


def by_weight(provisioners: Sequence[ProvisionerSpec]) -> list[ProvisionerSpec]:
    """Weight descending, then name (karpy's deterministic tie-break)."""
    return sorted(provisioners, key=lambda p: (-p.weight, p.name))
