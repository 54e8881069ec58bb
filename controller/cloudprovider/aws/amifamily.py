"""AMI families (AL2, Bottlerocket, Ubuntu, Custom): their facts and what a node template implies.

Pure (spec §4.5, §5.9). Per family: the feature flags the capacity formulas read (podsPerCore,
evictionSoft, ENI-limited kube-reserved memory), the default block device mappings, the device
whose volume is the node's ephemeral storage, and the public SSM parameters naming the EKS
optimized AMIs for a Kubernetes version. `node_shape(template)` is what a resolved
AWSNodeTemplate changes in the formulas of `overhead.py`; both the AWS and the simulated
provider apply it, so they agree on pods and ephemeral storage per node.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.cloudprovider.aws.overhead import GIB, NodeShape
from controller.core.quantity import parse_quantity

AL2, BOTTLEROCKET, UBUNTU, CUSTOM = "AL2", "Bottlerocket", "Ubuntu", "Custom"


@dataclass(frozen=True)
class Family:
    name: str
    ephemeral_device: str | None
    default_block_devices: tuple[Mapping[str, Any], ...]
    supports_pods_per_core: bool = True
    supports_eviction_soft: bool = True
    eni_limited_memory: bool = True


def _gp3(device: str, gib: int) -> dict[str, Any]:
    return {"deviceName": device, "ebs": {"volumeSize": f"{gib}Gi", "volumeType": "gp3", "encrypted": True}}


FAMILIES = {
    AL2: Family(AL2, "/dev/xvda", (_gp3("/dev/xvda", 20),)),
    UBUNTU: Family(UBUNTU, "/dev/sda1", (_gp3("/dev/sda1", 20),)),
    BOTTLEROCKET: Family(
        BOTTLEROCKET,
        "/dev/xvdb",
        (_gp3("/dev/xvda", 4), _gp3("/dev/xvdb", 20)),
        supports_pods_per_core=False,
        supports_eviction_soft=False,
        eni_limited_memory=False,
    ),
    CUSTOM: Family(CUSTOM, None, ()),
}


def family_of(template: AWSNodeTemplate | None) -> Family:
    return FAMILIES.get(template.ami_family if template is not None else AL2, FAMILIES[AL2])


def block_devices(template: AWSNodeTemplate | None) -> tuple[Mapping[str, Any], ...]:
    """The template's mappings, or the family's defaults when it has none."""
    if template is not None and template.block_device_mappings:
        return tuple(template.block_device_mappings)
    return family_of(template).default_block_devices


def volume_bytes(mapping: Mapping[str, Any]) -> int | None:
    size = (mapping.get("ebs") or {}).get("volumeSize")
    if size is None:
        return None
    return int(parse_quantity(str(size)))


def ephemeral_storage(template: AWSNodeTemplate | None) -> int | None:
    """The node's ephemeral storage in bytes from the block device mappings (None: 20Gi default)."""
    family = family_of(template)
    mappings = block_devices(template)
    if family.ephemeral_device is None:  # Custom: the last mapping's volume
        return volume_bytes(mappings[-1]) if mappings else None
    for mapping in mappings:
        if mapping.get("deviceName") == family.ephemeral_device:
            return volume_bytes(mapping)
    return None


def node_shape(template: AWSNodeTemplate | None) -> NodeShape:
    family = family_of(template)
    return NodeShape(
        pods_per_core=family.supports_pods_per_core,
        eviction_soft=family.supports_eviction_soft,
        eni_limited_memory=family.eni_limited_memory,
        ephemeral_storage=ephemeral_storage(template),
    )


def volume_gib(mapping: Mapping[str, Any]) -> int | None:
    """A mapping's size rounded up to whole GiB (what EC2 takes)."""
    size = volume_bytes(mapping)
    return None if size is None else max(1, math.ceil(size / GIB))


def ssm_parameters(family: str, k8s_version: str, arch: str, gpu: bool) -> Sequence[str]:
    """The public SSM parameters naming the EKS optimized AMI of a type's architecture, `gpu` for
    an accelerated type (GPUs or AWS Neuron accelerators); empty when the family has none for it.

    As Karpenter v0.31's `DefaultAMIs` (`pkg/providers/amifamily/{al2,bottlerocket,ubuntu}.go`):
    AL2 boots accelerated x86 types from `amazon-linux-2-gpu` and has no AMI for accelerated arm64
    types (e.g. g5g); Bottlerocket boots accelerated types of both architectures — NVIDIA GPUs and
    Neuron (inf, trn) alike — from its `aws-k8s-<version>-nvidia` variant; Ubuntu has one AMI per
    architecture for every type; Custom names none (its `amiSelector` decides)."""
    if family == AL2:
        if arch == "arm64":
            return (
                ()
                if gpu
                else (f"/aws/service/eks/optimized-ami/{k8s_version}/amazon-linux-2-arm64/recommended/image_id",)
            )
        suffix = "-gpu" if gpu else ""
        return (f"/aws/service/eks/optimized-ami/{k8s_version}/amazon-linux-2{suffix}/recommended/image_id",)
    if family == BOTTLEROCKET:
        variant = f"aws-k8s-{k8s_version}" + ("-nvidia" if gpu else "")
        return (f"/aws/service/bottlerocket/{variant}/{'arm64' if arch == 'arm64' else 'x86_64'}/latest/image_id",)
    if family == UBUNTU:
        return (f"/aws/service/canonical/ubuntu/eks/20.04/{k8s_version}/stable/current/{arch}/hvm/ebs-gp2/ami-id",)
    return ()
