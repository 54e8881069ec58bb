"""The simulated instance-type catalog, and the JSON format `karpy catalog` writes and reads.

Pure and deterministic. `simulated_catalog()` models AWS: categories c, m, r, t and GPU families
(g4dn, g4ad, g5, g5g, g6, p3, p4d), AWS's Neuron families (inf1, inf2, trn1: `aws.amazon.com/neuron`
devices and the `instance-accelerator-*` labels, as the AWS provider reads them), generations 1–7,
Intel/AMD amd64 and Graviton arm64 (`g`) variants, local-NVMe (`d`) and network (`n`) variants,
sizes large … 48xlarge and metal, ENI limits, GPUs, the `karpenter.k8s.aws/instance-*` labels,
3 zones in us-west-2, and spot and on-demand offerings priced by `pricing.py`. Capacity and
overhead follow `controller.cloudprovider.aws.overhead` with default kubelet settings.

`catalog_to_json()` / `catalog_from_json()` are the `{"instanceTypes": [...]}` format of
design.md, so a catalog exported from a real AWS account can be used instead.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.cloudprovider.aws.instancetypes import EBS_DRIVER, ebs_attach_limit
from controller.cloudprovider.aws.overhead import MachineShape, capacity, eni_limited_pods, overhead
from controller.cloudprovider.simulated.pricing import on_demand_price, spot_price
from controller.core import labels as L
from controller.core.quantity import QuantityError
from controller.core.resources import format_resources, parse_resources
from controller.scheduling.instancetypes import new_instance_type
from controller.scheduling.types import InstanceType, Offering

REGION = "us-west-2"
ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")
CAPACITY_TYPES = (L.CAPACITY_TYPE_SPOT, L.CAPACITY_TYPE_ON_DEMAND)

_SIZE_VCPUS = {
    "large": 2, "xlarge": 4, "2xlarge": 8, "4xlarge": 16, "8xlarge": 32, "9xlarge": 36, "10xlarge": 40,
    "6xlarge": 24, "12xlarge": 48, "16xlarge": 64, "18xlarge": 72, "24xlarge": 96, "32xlarge": 128, "48xlarge": 192,
}  # fmt: skip
_GEN5 = ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "metal")
_GEN5C = ("large", "xlarge", "2xlarge", "4xlarge", "9xlarge", "12xlarge", "18xlarge", "24xlarge", "metal")
_GEN6 = ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "32xlarge", "metal")
_WIDE = (*_GEN6[:-1], "48xlarge", "metal")
_GRAVITON = ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "metal")


@dataclass(frozen=True, slots=True)
class Gpu:
    name: str
    manufacturer: str
    memory_mib: int
    counts: Mapping[str, int]  # size -> GPUs (1 when the size is absent)
    neuron: bool = False  # an AWS Neuron device (Inferentia, Trainium): accelerator labels only


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    sizes: tuple[str, ...]
    gib_per_vcpu: float
    gpu: Gpu | None = None
    zones: tuple[str, ...] = ZONES


_T4 = Gpu("t4", "nvidia", 16384, {"12xlarge": 4, "metal": 8})
_FAMILIES = (
    *(Family(f, _GEN5C if f == "c5" or f == "c5d" else _GEN5, g) for f, g in (
        ("c5", 2), ("m5", 4), ("r5", 8), ("c5d", 2), ("m5d", 4), ("r5d", 8), ("m5n", 4), ("r5n", 8))),
    Family("c5n", ("large", "xlarge", "2xlarge", "4xlarge", "9xlarge", "18xlarge", "metal"), 2.625),
    *(Family(f, _GEN5[:-1], g) for f, g in (("c5a", 2), ("m5a", 4), ("r5a", 8))),
    *(Family(f, _GEN6, g) for f, g in (("c6i", 2), ("m6i", 4), ("r6i", 8), ("c6id", 2), ("m6id", 4), ("r6id", 8))),
    *(Family(f, _WIDE, g) for f, g in (("c6a", 2), ("m6a", 4), ("r6a", 8))),
    *(Family(f, _GRAVITON, g) for f, g in (("c6g", 2), ("m6g", 4), ("r6g", 8), ("c6gd", 2), ("m6gd", 4), ("r6gd", 8))),
    Family("c6gn", _GRAVITON[:-1], 2),
    *(Family(f, _WIDE, g) for f, g in (("c7i", 2), ("m7i", 4), ("r7i", 8), ("c7a", 2), ("m7a", 4), ("r7a", 8))),
    *(Family(f, _GRAVITON, g) for f, g in (("c7g", 2), ("m7g", 4), ("r7g", 8), ("c7gd", 2), ("m7gd", 4), ("r7gd", 8))),
    Family("c4", ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge"), 1.875),
    Family("m4", ("large", "xlarge", "2xlarge", "4xlarge", "10xlarge", "16xlarge"), 4),
    Family("r4", ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge"), 7.625),
    Family("c3", ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge"), 1.875),
    Family("m3", ("large", "xlarge", "2xlarge"), 3.75),
    Family("r3", ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge"), 7.625),
    *(Family(f, ("large", "xlarge", "2xlarge"), 4) for f in ("t3", "t3a", "t4g")),
    Family("g4dn", ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "metal"), 4, _T4),
    Family("g4ad", ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge"), 4,
           Gpu("radeon-pro-v520", "amd", 8192, {"8xlarge": 2, "16xlarge": 4})),
    Family("g5", ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"), 4,
           Gpu("a10g", "nvidia", 24576, {"12xlarge": 4, "24xlarge": 4, "48xlarge": 8})),
    Family("g5g", ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge", "metal"), 2,
           Gpu("t4g", "nvidia", 16384, {"16xlarge": 2, "metal": 2})),
    Family("g6", ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"), 4,
           Gpu("l4", "nvidia", 24576, {"12xlarge": 4, "24xlarge": 4, "48xlarge": 8}), zones=ZONES[:2]),
    Family("p3", ("2xlarge", "8xlarge", "16xlarge"), 7.625,
           Gpu("v100", "nvidia", 16384, {"8xlarge": 4, "16xlarge": 8})),
    Family("p4d", ("24xlarge",), 12, Gpu("a100", "nvidia", 40960, {"24xlarge": 8}), zones=ZONES[:2]),
    Family("inf1", ("xlarge", "2xlarge", "6xlarge", "24xlarge"), 2,
           Gpu("inferentia", "aws", 8192, {"6xlarge": 4, "24xlarge": 16}, neuron=True)),
    Family("inf2", ("xlarge", "8xlarge", "24xlarge", "48xlarge"), 4,
           Gpu("inferentia2", "aws", 32768, {"24xlarge": 6, "48xlarge": 12}, neuron=True), zones=ZONES[:2]),
    Family("trn1", ("2xlarge", "32xlarge"), 4,
           Gpu("trainium", "aws", 32768, {"32xlarge": 16}, neuron=True), zones=ZONES[:2]),
)  # fmt: skip

_FAMILY_RE = re.compile(r"^([a-z]+)([0-9]+)([a-z]*)$")
GPU_RESOURCES = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}
NEURON = "aws.amazon.com/neuron"


def _enis(vcpus: int, family: str) -> tuple[int, int]:
    """(max network interfaces, IPv4 addresses per interface), modelled on AWS's table."""
    if family.startswith("t") and vcpus == 2:
        return 3, 12
    if vcpus <= 2:
        return 3, 10
    if vcpus <= 8:
        return 4, 15
    if vcpus <= 48:
        return 8, 30
    return 15, 50


def _bandwidth(vcpus: int, variants: str) -> int:
    table = ((2, 750), (4, 1250), (8, 2500), (16, 5000), (48, 12000), (72, 20000), (96, 25000))
    mbps = next((m for v, m in table if vcpus <= v), 50000)
    return min(mbps * 4, 100000) if "n" in variants else mbps


def _build(family: Family, size: str) -> InstanceType:
    match = _FAMILY_RE.match(family.name)
    assert match is not None, family.name
    category, generation, variants = match.group(1), int(match.group(2)), match.group(3)
    graviton = ("g" in variants and category != "g") or (category == "g" and variants.endswith("g"))
    processor = "graviton" if graviton else "amd" if variants.startswith("a") else "intel"
    vcpus = _SIZE_VCPUS.get(size) or max(_SIZE_VCPUS[s] for s in family.sizes if s != "metal")
    memory_mib = int(vcpus * family.gib_per_vcpu * 1024)
    max_enis, ipv4 = _enis(vcpus, family.name)
    name = f"{family.name}.{size}"
    labels = {
        L.INSTANCE_TYPE: name,
        L.ARCH: "arm64" if graviton else "amd64",
        L.OS: "linux",
        L.REGION: REGION,
        L.INSTANCE_CATEGORY: category,
        L.INSTANCE_FAMILY: family.name,
        L.INSTANCE_GENERATION: str(generation),
        L.INSTANCE_SIZE: size,
        L.INSTANCE_CPU: str(vcpus),
        L.INSTANCE_MEMORY: str(memory_mib),
        L.INSTANCE_PODS: str(eni_limited_pods(max_enis, ipv4)),
        L.INSTANCE_HYPERVISOR: "" if size == "metal" else ("xen" if generation < 5 else "nitro"),
        L.INSTANCE_ENCRYPTION_IN_TRANSIT: str((generation >= 6 and not graviton) or "n" in variants).lower(),
        L.INSTANCE_NETWORK_BANDWIDTH: str(_bandwidth(vcpus, variants)),
    }
    if "d" in variants:
        labels[L.INSTANCE_LOCAL_NVME] = str(vcpus * 50)
    extended: dict[str, int] = {}
    gpu_count = 0
    if family.gpu is not None:
        gpu = family.gpu
        gpu_count = gpu.counts.get(size, 1)
        extended[NEURON if gpu.neuron else GPU_RESOURCES[gpu.manufacturer]] = gpu_count
        for kind in ("accelerator",) if gpu.neuron else ("gpu", "accelerator"):
            labels[f"karpenter.k8s.aws/instance-{kind}-name"] = gpu.name
            labels[f"karpenter.k8s.aws/instance-{kind}-manufacturer"] = gpu.manufacturer
            labels[f"karpenter.k8s.aws/instance-{kind}-count"] = str(gpu_count)
            labels[f"karpenter.k8s.aws/instance-{kind}-memory"] = str(gpu.memory_mib)
    shape = MachineShape(vcpus, memory_mib, eni_limited_pods(max_enis, ipv4), extended)
    cap = capacity(shape)
    od = on_demand_price(
        category=category,
        generation=generation,
        processor=processor,
        variants=variants.replace("g", "").replace("a", "", 1 if processor == "amd" else 0),
        vcpus=vcpus,
        memory_gib=memory_mib / 1024,
        gpu_name=family.gpu.name if family.gpu else "",
        gpu_count=gpu_count,
    )
    offerings = []
    for zone in family.zones:
        offerings.append(Offering(zone, L.CAPACITY_TYPE_SPOT, spot_price(od, family.name, zone)))
        offerings.append(Offering(zone, L.CAPACITY_TYPE_ON_DEMAND, od))
    it = new_instance_type(name, labels, cap, overhead(shape, cap), offerings)
    nvme_disks = 1 if "d" in variants else 0
    limit = ebs_attach_limit(labels[L.INSTANCE_HYPERVISOR], nvme_disks)
    return dataclasses.replace(it, volume_limits={EBS_DRIVER: limit})


@functools.cache
def simulated_catalog() -> tuple[InstanceType, ...]:
    """Every simulated instance type, sorted by name."""
    types = [_build(family, size) for family in _FAMILIES for size in family.sizes]
    return tuple(sorted(types, key=lambda it: it.name))


class CatalogError(ValueError):
    """A catalog file that cannot be read; the message names the entry and field."""


def catalog_to_json(types: Iterable[InstanceType]) -> dict[str, Any]:
    out = []
    for it in types:
        out.append(
            {
                "name": it.name,
                "capacity": format_resources(it.capacity),
                "overhead": format_resources(it.overhead),
                "allocatable": format_resources(it.allocatable),
                "labels": dict(sorted(it.labels.items())),
                "volumeLimits": dict(sorted(it.volume_limits.items())),
                "offerings": [
                    {"zone": o.zone, "capacityType": o.capacity_type, "price": o.price, "available": o.available}
                    for o in it.offerings
                ],
            }
        )
    return {"instanceTypes": out}


def catalog_from_json(obj: Any) -> tuple[InstanceType, ...]:
    """Read the `{"instanceTypes": [...]}` format (raises CatalogError naming the field)."""
    if not isinstance(obj, Mapping) or not isinstance(obj.get("instanceTypes"), list):
        raise CatalogError('a catalog must be an object with an "instanceTypes" list')
    types = []
    for i, entry in enumerate(obj["instanceTypes"]):
        types.append(_entry(entry, f"instanceTypes[{i}]"))
    return tuple(types)


def _entry(entry: Any, path: str) -> InstanceType:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) or not entry["name"]:
        raise CatalogError(f"{path}.name: required")
    name = entry["name"]
    path = f"{path} ({name})"
    resources = {}
    for field in ("capacity", "overhead"):
        raw = entry.get(field) or {}
        if not isinstance(raw, Mapping):
            raise CatalogError(f"{path}.{field}: expected a mapping")
        try:
            resources[field] = parse_resources(raw)
        except QuantityError as err:
            raise CatalogError(f"{path}.{field}: {err}") from err
    labels = entry.get("labels") or {}
    if not isinstance(labels, Mapping):
        raise CatalogError(f"{path}.labels: expected a mapping")
    labels = {str(k): str(v) for k, v in labels.items()}
    labels.setdefault(L.INSTANCE_TYPE, name)
    it = new_instance_type(name, labels, resources["capacity"], resources["overhead"], _offerings(entry, path))
    limits = entry.get("volumeLimits") or {}
    if not isinstance(limits, Mapping) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in limits.values()
    ):
        raise CatalogError(f"{path}.volumeLimits: expected a mapping of CSI driver to a count")
    return dataclasses.replace(it, volume_limits={str(k): int(v) for k, v in limits.items()})


def _offerings(entry: Mapping[str, Any], path: str) -> list[Offering]:
    raw = entry.get("offerings")
    if not isinstance(raw, Sequence):
        raise CatalogError(f"{path}.offerings: expected a list")
    out = []
    for j, off in enumerate(raw):
        where = f"{path}.offerings[{j}]"
        if not isinstance(off, Mapping):
            raise CatalogError(f"{where}: expected a mapping")
        zone, ct, price = off.get("zone"), off.get("capacityType"), off.get("price")
        if not isinstance(zone, str) or not zone:
            raise CatalogError(f"{where}.zone: required")
        if ct not in CAPACITY_TYPES:
            raise CatalogError(f"{where}.capacityType: must be spot or on-demand, got {ct!r}")
        if isinstance(price, bool) or not isinstance(price, (int, float)) or price < 0:
            raise CatalogError(f"{where}.price: must be a non-negative number, got {price!r}")
        out.append(Offering(zone, ct, float(price), bool(off.get("available", True))))
    return out
