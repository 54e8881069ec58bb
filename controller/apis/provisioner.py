"""The Provisioner (`karpenter.sh/v1alpha5`) as a typed, frozen object.

Pure. `Provisioner.from_wire()` converts a document that has passed the schema (see
`schemas.py`) into plain frozen dataclasses the scheduler and controllers read; `to_wire()`
dumps it back. Defaulting and validation work on the wire form (`defaults.py`,
`validation.py`); `load.py` chains the three.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.core.quantity import parse_duration
from controller.core.taints import Taint, taint_from_wire, taint_to_wire

API_VERSION = "karpenter.sh/v1alpha5"
KIND = "Provisioner"


@dataclass(frozen=True)
class NodeSelectorRequirement:
    """One `spec.requirements` entry as written (key, operator, values), in its order."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    @staticmethod
    def from_wire(obj: Mapping[str, Any]) -> NodeSelectorRequirement:
        return NodeSelectorRequirement(
            str(obj["key"]), str(obj["operator"]), tuple(str(v) for v in obj.get("values") or ())
        )

    def to_wire(self) -> dict[str, Any]:
        return {"key": self.key, "operator": self.operator, "values": list(self.values)}

    def __str__(self) -> str:
        return f"{self.key} {self.operator} {', '.join(self.values)}".rstrip()


@dataclass(frozen=True)
class KubeletConfiguration:
    cluster_dns: tuple[str, ...] = ()
    container_runtime: str | None = None
    max_pods: int | None = None
    pods_per_core: int | None = None
    system_reserved: dict[str, str] = field(default_factory=dict)
    kube_reserved: dict[str, str] = field(default_factory=dict)
    eviction_hard: dict[str, str] = field(default_factory=dict)
    eviction_soft: dict[str, str] = field(default_factory=dict)
    eviction_soft_grace_period: dict[str, str] = field(default_factory=dict)
    eviction_max_pod_grace_period: int | None = None
    image_gc_high_threshold_percent: int | None = None
    image_gc_low_threshold_percent: int | None = None
    cpu_cfs_quota: bool | None = None

    @staticmethod
    def from_wire(obj: Mapping[str, Any]) -> KubeletConfiguration:
        grace = obj.get("evictionMaxPodGracePeriod")
        if isinstance(grace, str):
            grace = int(parse_duration(grace))
        return KubeletConfiguration(
            cluster_dns=tuple(obj.get("clusterDNS") or ()),
            container_runtime=obj.get("containerRuntime"),
            max_pods=obj.get("maxPods"),
            pods_per_core=obj.get("podsPerCore"),
            system_reserved=dict(obj.get("systemReserved") or {}),
            kube_reserved=dict(obj.get("kubeReserved") or {}),
            eviction_hard=dict(obj.get("evictionHard") or {}),
            eviction_soft=dict(obj.get("evictionSoft") or {}),
            eviction_soft_grace_period=dict(obj.get("evictionSoftGracePeriod") or {}),
            eviction_max_pod_grace_period=grace,
            image_gc_high_threshold_percent=obj.get("imageGCHighThresholdPercent"),
            image_gc_low_threshold_percent=obj.get("imageGCLowThresholdPercent"),
            cpu_cfs_quota=obj.get("cpuCFSQuota"),
        )

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "clusterDNS": list(self.cluster_dns),
            "containerRuntime": self.container_runtime,
            "maxPods": self.max_pods,
            "podsPerCore": self.pods_per_core,
            "systemReserved": self.system_reserved,
            "kubeReserved": self.kube_reserved,
            "evictionHard": self.eviction_hard,
            "evictionSoft": self.eviction_soft,
            "evictionSoftGracePeriod": self.eviction_soft_grace_period,
            "evictionMaxPodGracePeriod": self.eviction_max_pod_grace_period,
            "imageGCHighThresholdPercent": self.image_gc_high_threshold_percent,
            "imageGCLowThresholdPercent": self.image_gc_low_threshold_percent,
            "cpuCFSQuota": self.cpu_cfs_quota,
        }
        return {k: v for k, v in wire.items() if v not in (None, [], {})}


@dataclass(frozen=True)
class Condition:
    """A knative-style status condition."""

    type: str
    status: str
    severity: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""

    def to_wire(self) -> dict[str, str]:
        wire = {
            "type": self.type,
            "status": self.status,
            "severity": self.severity,
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": self.last_transition_time,
        }
        return {k: v for k, v in wire.items() if v}


@dataclass(frozen=True)
class ProvisionerStatus:
    """What karpy reports: the summed capacity of the provisioner's nodes (`resources`)."""

    resources: dict[str, str] = field(default_factory=dict)
    conditions: tuple[Condition, ...] = ()
    last_scale_time: str | None = None

    @staticmethod
    def from_wire(obj: Mapping[str, Any]) -> ProvisionerStatus:
        return ProvisionerStatus(
            resources={k: str(v) for k, v in (obj.get("resources") or {}).items()},
            conditions=tuple(
                Condition(
                    type=c["type"],
                    status=c["status"],
                    severity=c.get("severity", ""),
                    reason=c.get("reason", ""),
                    message=c.get("message", ""),
                    last_transition_time=c.get("lastTransitionTime", ""),
                )
                for c in obj.get("conditions") or []
            ),
            last_scale_time=obj.get("lastScaleTime"),
        )

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {}
        if self.resources:
            wire["resources"] = dict(self.resources)
        if self.conditions:
            wire["conditions"] = [c.to_wire() for c in self.conditions]
        if self.last_scale_time:
            wire["lastScaleTime"] = self.last_scale_time
        return wire


@dataclass(frozen=True)
class Provisioner:
    """A Provisioner's spec (and the status fields karpy writes), after defaulting."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    requirements: tuple[NodeSelectorRequirement, ...] = ()
    kubelet: KubeletConfiguration | None = None
    limits: dict[str, str] = field(default_factory=dict)
    ttl_seconds_after_empty: int | None = None
    ttl_seconds_until_expired: int | None = None
    weight: int | None = None
    consolidation_enabled: bool = False
    provider_ref: dict[str, str] | None = None
    provider: dict[str, Any] | None = None
    status: ProvisionerStatus = field(default_factory=ProvisionerStatus)
    uid: str = ""
    resource_version: str = ""

    @property
    def provider_ref_name(self) -> str | None:
        return self.provider_ref.get("name") if self.provider_ref else None

    @staticmethod
    def from_wire(obj: Mapping[str, Any]) -> Provisioner:
        """From a schema-checked document (`schemas.PROVISIONER.load()` result or raw equivalent)."""
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        kubelet = spec.get("kubeletConfiguration")
        reqs = tuple(NodeSelectorRequirement.from_wire(r) for r in spec.get("requirements") or [])
        return Provisioner(
            name=str(meta.get("name") or ""),
            labels=dict(spec.get("labels") or {}),
            annotations=dict(spec.get("annotations") or {}),
            taints=tuple(taint_from_wire(t) for t in spec.get("taints") or []),
            startup_taints=tuple(taint_from_wire(t) for t in spec.get("startupTaints") or []),
            requirements=reqs,
            kubelet=KubeletConfiguration.from_wire(kubelet) if kubelet is not None else None,
            limits={k: str(v) for k, v in ((spec.get("limits") or {}).get("resources") or {}).items()},
            ttl_seconds_after_empty=spec.get("ttlSecondsAfterEmpty"),
            ttl_seconds_until_expired=spec.get("ttlSecondsUntilExpired"),
            weight=spec.get("weight"),
            consolidation_enabled=bool((spec.get("consolidation") or {}).get("enabled", False)),
            provider_ref=dict(spec["providerRef"]) if spec.get("providerRef") is not None else None,
            provider=spec.get("provider"),
            status=ProvisionerStatus.from_wire(status) if isinstance(status, Mapping) else ProvisionerStatus(),
            uid=str(meta.get("uid") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
        )

    def to_wire(self) -> dict[str, Any]:
        """The document in Karpenter's wire format (what `from_wire` reads back)."""
        spec: dict[str, Any] = {
            "labels": self.labels,
            "annotations": self.annotations,
            "taints": [taint_to_wire(t) for t in self.taints],
            "startupTaints": [taint_to_wire(t) for t in self.startup_taints],
            "requirements": [r.to_wire() for r in self.requirements],
            "kubeletConfiguration": self.kubelet.to_wire() if self.kubelet is not None else None,
            "limits": {"resources": self.limits} if self.limits else None,
            "ttlSecondsAfterEmpty": self.ttl_seconds_after_empty,
            "ttlSecondsUntilExpired": self.ttl_seconds_until_expired,
            "weight": self.weight,
            "consolidation": {"enabled": True} if self.consolidation_enabled else None,
            "providerRef": self.provider_ref,
            "provider": self.provider,
        }
        meta: dict[str, Any] = {"name": self.name}
        if self.uid:
            meta["uid"] = self.uid
        if self.resource_version:
            meta["resourceVersion"] = self.resource_version
        doc: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": meta,
            "spec": {k: v for k, v in spec.items() if v not in (None, [], {})},
        }
        status = self.status.to_wire()
        if status:
            doc["status"] = status
        return doc
