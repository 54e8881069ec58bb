"""EC2 `DescribeInstanceTypes` entries → karpy `InstanceType`s (spec §4.4, §4.5).

Pure. `instance_type(info, ...)` derives the `karpenter.k8s.aws/instance-*` labels, the capacity
and overhead with the AWS formulas (`overhead.py`, default kubelet settings; per-provisioner
settings and the node template are applied later by `shaping.for_provisioner`), and the
offerings: every zone the type is offered in among the subnets' zones × each supported usage
class (spot, on-demand), priced from `Prices`, available only when the price is known and the
offering is not in the insufficient-capacity cache. `volume_limits`: the EBS attachment limit
(`ebs_attach_limit`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from controller.cloudprovider.aws.overhead import MachineShape, capacity, eni_limited_pods, overhead
from controller.cloudprovider.aws.pricing import Prices
from controller.core import labels as L
from controller.scheduling.instancetypes import new_instance_type
from controller.scheduling.types import InstanceType, Offering

ARCHITECTURES = {"x86_64": "amd64", "arm64": "arm64"}
USAGE_CLASSES = (L.CAPACITY_TYPE_SPOT, L.CAPACITY_TYPE_ON_DEMAND)
GPU_RESOURCES = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "habana": "habana.ai/gaudi"}
NEURON = "aws.amazon.com/neuron"
POD_ENI = "vpc.amazonaws.com/pod-eni"
_CATEGORY = re.compile(r"(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.")

OfferingKey = tuple[str, str, str]

EBS_DRIVER = "ebs.csi.aws.com"
NITRO_SHARED_ATTACHMENTS = 28  # AWS: most Nitro types, shared by EBS volumes, ENIs and NVMe instance store
XEN_ATTACHMENTS = 39  # AWS: Xen types, more than 40 (39 beyond the root volume) risks boot failures


def _lower(text: str) -> str:
    return text.lower().replace(" ", "-")


def architecture(info: Mapping[str, Any]) -> str | None:
    for arch in (info.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ():
        if arch in ARCHITECTURES:
            return ARCHITECTURES[arch]
    return None


def eni_pods(info: Mapping[str, Any]) -> int:
    net = info.get("NetworkInfo") or {}
    cards = net.get("NetworkCards") or []
    default_index = net.get("DefaultNetworkCardIndex", 0)
    enis = next((c.get("MaximumNetworkInterfaces") for c in cards if c.get("NetworkCardIndex") == default_index), None)
    enis = enis or net.get("MaximumNetworkInterfaces") or 1
    return eni_limited_pods(int(enis), int(net.get("Ipv4AddressesPerInterface") or 2))


def ebs_attach_limit(hypervisor: str, nvme_disks: int = 0, maximum: int | None = None, dedicated: bool = False) -> int:
    """How many EBS volumes a new node of the type can attach besides its root volume, as AWS
    documents it ("Amazon EBS volume limits for Amazon EC2 instances"): a dedicated EBS limit
    holds the root volume too; a shared limit (Nitro: 28 unless DescribeInstanceTypes says
    otherwise) also holds the network interfaces — the primary one at boot, as the EBS CSI driver
    counts — and the NVMe instance store disks; Xen types take 39."""
    if dedicated and maximum:
        return max(0, maximum - 1)
    if hypervisor == "xen" and not maximum:
        return XEN_ATTACHMENTS
    shared = maximum or NITRO_SHARED_ATTACHMENTS
    return max(0, shared - 1 - nvme_disks - 1)


def volume_limits(info: Mapping[str, Any]) -> dict[str, int]:
    """CSI driver → attachable volumes of a new node (the EBS driver only)."""
    ebs = info.get("EbsInfo") or {}
    storage = info.get("InstanceStorageInfo") or {}
    nvme = 0
    if storage.get("NvmeSupport") not in (None, "unsupported"):
        nvme = sum(int(d.get("Count") or 0) for d in storage.get("Disks") or [])
    maximum = ebs.get("MaximumEbsAttachments")
    limit = ebs_attach_limit(
        str(info.get("Hypervisor") or ""),
        nvme,
        int(maximum) if isinstance(maximum, int) else None,
        ebs.get("AttachmentLimitType") == "dedicated",
    )
    return {EBS_DRIVER: limit}


def labels_of(info: Mapping[str, Any], region: str) -> dict[str, str]:
    name = str(info["InstanceType"])
    family, _, size = name.partition(".")
    vcpus = int((info.get("VCpuInfo") or {}).get("DefaultVCpus") or 0)
    labels = {
        L.INSTANCE_TYPE: name,
        L.OS: "linux",
        L.REGION: region,
        L.INSTANCE_FAMILY: family,
        L.INSTANCE_SIZE: size,
        L.INSTANCE_CPU: str(vcpus),
        L.INSTANCE_MEMORY: str(int((info.get("MemoryInfo") or {}).get("SizeInMiB") or 0)),
        L.INSTANCE_PODS: str(eni_pods(info)),
        L.INSTANCE_HYPERVISOR: str(info.get("Hypervisor") or ""),
        L.INSTANCE_ENCRYPTION_IN_TRANSIT: str(
            bool((info.get("NetworkInfo") or {}).get("EncryptionInTransitSupported"))
        ).lower(),
    }
    arch = architecture(info)
    if arch:
        labels[L.ARCH] = arch
    match = _CATEGORY.match(name)
    if match:
        labels[L.INSTANCE_CATEGORY] = match.group(1)
        labels[L.INSTANCE_GENERATION] = match.group(3)
    storage = info.get("InstanceStorageInfo") or {}
    if storage and storage.get("NvmeSupport") != "unsupported" and storage.get("TotalSizeInGB"):
        labels[L.INSTANCE_LOCAL_NVME] = str(storage["TotalSizeInGB"])
    cards = (info.get("NetworkInfo") or {}).get("NetworkCards") or []
    bandwidth = sum(float(c.get("BaselineBandwidthInGbps") or 0) for c in cards)
    if bandwidth:
        labels[L.INSTANCE_NETWORK_BANDWIDTH] = str(round(bandwidth * 1000))
    gpus = (info.get("GpuInfo") or {}).get("Gpus") or []
    if len(gpus) == 1:
        gpu = gpus[0]
        for kind in ("gpu", "accelerator"):
            labels[f"{L.AWS_INSTANCE_PREFIX}-{kind}-name"] = _lower(str(gpu.get("Name", "")))
            labels[f"{L.AWS_INSTANCE_PREFIX}-{kind}-manufacturer"] = _lower(str(gpu.get("Manufacturer", "")))
            labels[f"{L.AWS_INSTANCE_PREFIX}-{kind}-count"] = str(gpu.get("Count", 0))
            labels[f"{L.AWS_INSTANCE_PREFIX}-{kind}-memory"] = str((gpu.get("MemoryInfo") or {}).get("SizeInMiB", 0))
    accelerators = neuron_devices(info)
    if len(accelerators) == 1:
        acc = accelerators[0]
        labels[L.INSTANCE_ACCELERATOR_NAME] = _lower(str(acc.get("Name", "")))
        labels[L.INSTANCE_ACCELERATOR_MANUFACTURER] = _lower(str(acc.get("Manufacturer", "")))
        labels[L.INSTANCE_ACCELERATOR_COUNT] = str(acc.get("Count", 0))
    return labels


def neuron_devices(info: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A type's AWS Neuron devices (Inferentia, Trainium): `InferenceAcceleratorInfo` as Karpenter
    v0.31 reads it (inf1, inf2), else `NeuronInfo`, where EC2 describes Trainium (trn1, trn2), which
    v0.31 could only know from a table of trn1 sizes: without it a trn1 offers no neuron resource
    and boots the plain AMI."""
    accelerators = (info.get("InferenceAcceleratorInfo") or {}).get("Accelerators") or []
    if accelerators:
        return [a for a in accelerators if isinstance(a, Mapping)]
    devices = (info.get("NeuronInfo") or {}).get("NeuronDevices") or []
    return [{**d, "Manufacturer": d.get("Manufacturer", "AWS")} for d in devices if isinstance(d, Mapping)]


def extended_resources(info: Mapping[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for gpu in (info.get("GpuInfo") or {}).get("Gpus") or []:
        resource = GPU_RESOURCES.get(str(gpu.get("Manufacturer", "")).lower())
        if resource:
            out[resource] = out.get(resource, 0) + int(gpu.get("Count") or 0)
    neuron = sum(int(a.get("Count") or 0) for a in neuron_devices(info))
    if neuron:
        out[NEURON] = neuron
    return out


def offerings(
    info: Mapping[str, Any], zones: Iterable[str], prices: Prices, unavailable: frozenset[OfferingKey]
) -> list[Offering]:
    name = str(info["InstanceType"])
    usage = [u for u in USAGE_CLASSES if u in (info.get("SupportedUsageClasses") or ())]
    out = []
    for zone in sorted(zones):
        for capacity_type in usage:
            price = prices.spot(name, zone) if capacity_type == L.CAPACITY_TYPE_SPOT else prices.on_demand(name)
            available = price is not None and (name, zone, capacity_type) not in unavailable
            out.append(Offering(zone, capacity_type, price if price is not None else 0.0, available))
    return out


@functools.cache
def branch_interfaces() -> Mapping[str, int]:
    """Instance type → branch network interfaces (`data/branch_enis.json`, dated; AWS publishes
    this limit in no API): what `vpc.amazonaws.com/pod-eni` a node of the type offers."""
    doc = json.loads((Path(__file__).parent / "data" / "branch_enis.json").read_text())
    return {str(k): int(v) for k, v in doc["branchInterfaces"].items()}


def instance_type(
    info: Mapping[str, Any],
    region: str,
    zones: Iterable[str],
    prices: Prices,
    unavailable: frozenset[OfferingKey] = frozenset(),
    pod_eni: bool = False,
) -> InstanceType:
    """One type as every provisioner sees it before its kubelet settings and node template.
    `pod_eni` (Karpenter's `aws.enablePodENI`): trunking-compatible types offer their branch
    interfaces as `vpc.amazonaws.com/pod-eni` (security groups for pods)."""
    labels = labels_of(info, region)
    extended = extended_resources(info)
    if pod_eni and branch_interfaces().get(labels[L.INSTANCE_TYPE], 0) > 0:
        extended[POD_ENI] = branch_interfaces()[labels[L.INSTANCE_TYPE]]
    shape = MachineShape(
        vcpus=int(labels[L.INSTANCE_CPU]),
        memory_mib=int(labels[L.INSTANCE_MEMORY]),
        eni_pods=int(labels[L.INSTANCE_PODS]),
        extended=extended,
    )
    cap = capacity(shape)
    it = new_instance_type(
        labels[L.INSTANCE_TYPE], labels, cap, overhead(shape, cap), offerings(info, zones, prices, unavailable)
    )
    return dataclasses.replace(it, volume_limits=volume_limits(info))


def usable(info: Mapping[str, Any]) -> bool:
    """hvm, x86_64 or arm64, with vCPUs and memory (what discovery keeps)."""
    return (
        "hvm" in (info.get("SupportedVirtualizationTypes") or ())
        and architecture(info) is not None
        and bool((info.get("VCpuInfo") or {}).get("DefaultVCpus"))
        and bool((info.get("MemoryInfo") or {}).get("SizeInMiB"))
    )
