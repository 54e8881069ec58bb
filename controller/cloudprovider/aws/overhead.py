"""AWS capacity and overhead formulas (spec §4.5) and their per-provisioner application.

Pure; the cloud math of AWS-shaped instance types, used by the AWS provider and by the
simulated provider (whose catalog is AWS-shaped). The scheduler never computes capacity: the
providers' `get_instance_types(provisioner, node_template)` return types with these applied.

Capacity: cpu = vCPUs; memory = MiB − ceil(MiB × 7.5 %) (VM overhead); ephemeral-storage = the
node template's root volume (20Gi by default); pods = maxPods, else the ENI limit
`MaxENI × (IPv4PerENI − 1) + 2`, then capped by `podsPerCore × vCPUs` when the AMI family
supports podsPerCore (Bottlerocket does not).
Overhead = kube-reserved + system-reserved + eviction threshold:
- kube-reserved: memory `11 × P + 255` MiB (P = the ENI-limited pods, or the computed pods for
  Bottlerocket), ephemeral-storage 1Gi, cpu 6 % of the first core, 1 % of the second, 0.5 % of
  cores 3–4 and 0.25 % above (each range floored); `kubeReserved` entries replace these per key;
- system-reserved: `systemReserved` as given;
- eviction: memory 100Mi and 10 % of ephemeral storage, or the largest `memory.available` /
  `nodefs.available` of evictionHard and evictionSoft (soft ignored by Bottlerocket; a
  percentage of capacity, 100 % = 0).
Worked example (m5.xlarge, defaults): allocatable cpu 3920m, memory 14162Mi, pods 58.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from controller.core.labels import INSTANCE_CPU, INSTANCE_MEMORY, INSTANCE_PODS
from controller.core.quantity import int_value
from controller.core.requirements import Requirement, Requirements
from controller.core.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from controller.scheduling.types import InstanceType, KubeletSpec

MIB = 2**20
GIB = 2**30
VM_MEMORY_OVERHEAD_PERCENT = 0.075
DEFAULT_EPHEMERAL_STORAGE = 20 * GIB

_CPU_RANGES = ((0, 1000, 0.06), (1000, 2000, 0.01), (2000, 4000, 0.005), (4000, 1 << 31, 0.0025))


@dataclass(frozen=True, slots=True)
class MachineShape:
    """What the formulas read about an instance type."""

    vcpus: int
    memory_mib: int
    eni_pods: int
    extended: Mapping[str, int] = field(default_factory=dict)
    ephemeral_storage: int = DEFAULT_EPHEMERAL_STORAGE


@dataclass(frozen=True, slots=True)
class NodeShape:
    """What a node template changes in the formulas: the AMI family's feature flags and the
    root volume size (spec §4.5, §5.9 per-family defaults)."""

    pods_per_core: bool = True  # the family honours podsPerCore
    eviction_soft: bool = True  # the family honours evictionSoft
    eni_limited_memory: bool = True  # kube-reserved memory from the ENI-limited pods
    ephemeral_storage: int | None = None  # None: keep the type's (20Gi default)
    vm_memory_overhead_percent: float = VM_MEMORY_OVERHEAD_PERCENT  # aws.vmMemoryOverheadPercent


DEFAULT_NODE_SHAPE = NodeShape()


def eni_limited_pods(max_enis: int, ipv4_per_eni: int) -> int:
    return max_enis * (ipv4_per_eni - 1) + 2


def kube_reserved_cpu(vcpus: int) -> int:
    """Millicores kube-reserved for `vcpus` (1 → 60, 2 → 70, 4 → 80, 96 → 310)."""
    milli = vcpus * 1000
    total = 0
    for start, end, pct in _CPU_RANGES:
        if milli >= start:
            total += int((min(milli, end) - start) * pct)
    return total


def pod_capacity(shape: MachineShape, kubelet: KubeletSpec | None, node: NodeShape = DEFAULT_NODE_SHAPE) -> int:
    count = shape.eni_pods
    if kubelet is not None and kubelet.max_pods is not None:
        count = kubelet.max_pods
    if kubelet is not None and kubelet.pods_per_core and node.pods_per_core:
        count = min(kubelet.pods_per_core * shape.vcpus, count)
    return count


def capacity(
    shape: MachineShape, kubelet: KubeletSpec | None = None, node: NodeShape = DEFAULT_NODE_SHAPE
) -> dict[str, int]:
    vm_overhead = math.ceil(shape.memory_mib * node.vm_memory_overhead_percent)
    out = {
        CPU: shape.vcpus * 1000,
        MEMORY: (shape.memory_mib - vm_overhead) * MIB,
        EPHEMERAL_STORAGE: node.ephemeral_storage or shape.ephemeral_storage,
        PODS: pod_capacity(shape, kubelet, node),
    }
    out.update({k: v for k, v in shape.extended.items() if v})
    return out


def _signal(capacity_value: int, text: str) -> int:
    if text.endswith("%"):
        pct = float(text[:-1])
        if pct == 100:
            pct = 0.0
        return math.ceil(capacity_value / 100 * pct)
    return int_value(text)


def eviction_threshold(
    cap: Mapping[str, int], kubelet: KubeletSpec | None, node: NodeShape = DEFAULT_NODE_SHAPE
) -> dict[str, int]:
    out = {MEMORY: 100 * MIB, EPHEMERAL_STORAGE: math.ceil(cap[EPHEMERAL_STORAGE] / 100 * 10)}
    override: dict[str, int] = {}
    sources: tuple[Mapping[str, str], ...] = ()
    if kubelet is not None:
        sources = (kubelet.eviction_hard, kubelet.eviction_soft) if node.eviction_soft else (kubelet.eviction_hard,)
    for signals in sources:
        for signal, resource in (("memory.available", MEMORY), ("nodefs.available", EPHEMERAL_STORAGE)):
            if signal in signals:
                value = _signal(cap[resource], signals[signal])
                override[resource] = max(override.get(resource, value), value)
    out.update(override)
    return out


def overhead(
    shape: MachineShape,
    cap: Mapping[str, int],
    kubelet: KubeletSpec | None = None,
    node: NodeShape = DEFAULT_NODE_SHAPE,
) -> dict[str, int]:
    pods = shape.eni_pods if node.eni_limited_memory else cap.get(PODS, shape.eni_pods)
    kube = {
        CPU: kube_reserved_cpu(shape.vcpus),
        MEMORY: (11 * pods + 255) * MIB,
        EPHEMERAL_STORAGE: GIB,
    }
    system: Mapping[str, int] = {}
    if kubelet is not None:
        kube.update(kubelet.kube_reserved)
        system = kubelet.system_reserved
    out: dict[str, int] = {}
    for part in (kube, system, eviction_threshold(cap, kubelet, node)):
        for name, value in part.items():
            out[name] = out.get(name, 0) + value
    return out


def shape_of(it: InstanceType) -> MachineShape:
    """Read the formula inputs back from an instance type's labels (falls back to its capacity)."""
    labels = it.labels
    cap = it.capacity
    vcpus = int(labels.get(INSTANCE_CPU, cap.get(CPU, 0) // 1000))
    if INSTANCE_MEMORY in labels:
        memory_mib = int(labels[INSTANCE_MEMORY])
    else:  # no raw size: take the capacity as if it had no VM overhead
        memory_mib = math.floor(cap.get(MEMORY, 0) / MIB / (1 - VM_MEMORY_OVERHEAD_PERCENT))
    extended = {k: v for k, v in cap.items() if k not in (CPU, MEMORY, PODS, EPHEMERAL_STORAGE)}
    return MachineShape(
        vcpus=vcpus,
        memory_mib=memory_mib,
        eni_pods=int(labels.get(INSTANCE_PODS, cap.get(PODS, 110))),
        extended=extended,
        ephemeral_storage=cap.get(EPHEMERAL_STORAGE, DEFAULT_EPHEMERAL_STORAGE),
    )


def apply_kubelet(it: InstanceType, kubelet: KubeletSpec | None, node: NodeShape = DEFAULT_NODE_SHAPE) -> InstanceType:
    """The instance type as a provisioner with this kubeletConfiguration and node template sees it.

    With neither (no kubelet settings, the default node shape) the type is returned unchanged.
    """
    if kubelet == KubeletSpec():
        kubelet = None
    if kubelet is None and node == DEFAULT_NODE_SHAPE:
        return it
    shape = shape_of(it)
    cap = dict(it.capacity)
    cap.update(capacity(shape, kubelet, node))
    pods = Requirement(INSTANCE_PODS, False, frozenset({str(cap[PODS])}))
    reqs = Requirements(pods if key == INSTANCE_PODS else req for key, req in it.requirements.items())
    return replace(it, requirements=reqs, capacity=cap, overhead=overhead(shape, cap, kubelet, node))
