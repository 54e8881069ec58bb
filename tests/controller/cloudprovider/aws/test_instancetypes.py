"""EC2 instance-type entries → karpy's instance types (`controller/cloudprovider/aws/instancetypes.py`):
the EBS attachment limit a new node offers the scheduler, GPUs and AWS Neuron devices."""

from __future__ import annotations

from typing import Any

import pytest

from controller.cloudprovider.aws.instancetypes import EBS_DRIVER, NEURON, ebs_attach_limit, instance_type
from controller.cloudprovider.aws.pricing import Prices
from controller.core import labels as L
from tests.support.moto import ec2_instance_type


def info(name: str = "m5.large", hypervisor: str = "nitro", **extra: Any) -> dict[str, Any]:
    return {
        "InstanceType": name,
        "Hypervisor": hypervisor,
        "VCpuInfo": {"DefaultVCpus": 2},
        "MemoryInfo": {"SizeInMiB": 8192},
        "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]},
        "NetworkInfo": {"MaximumNetworkInterfaces": 3, "Ipv4AddressesPerInterface": 10},
        "SupportedUsageClasses": ["on-demand"],
        **extra,
    }


@pytest.mark.parametrize(
    ("entry", "limit"),
    [
        (info(), 26),  # 28 shared - the primary ENI - the root volume
        (info("m5d.large", InstanceStorageInfo={"NvmeSupport": "required", "Disks": [{"Count": 1}]}), 25),
        (info("m4.large", hypervisor="xen"), 39),
        (info("m7i.large", EbsInfo={"MaximumEbsAttachments": 32, "AttachmentLimitType": "dedicated"}), 31),
        (info("x.large", EbsInfo={"MaximumEbsAttachments": 24, "AttachmentLimitType": "shared"}), 22),
    ],
    ids=["nitro", "nitro-with-instance-store", "xen", "dedicated", "shared-from-the-api"],
)
def test_the_ebs_attachment_limit_as_aws_documents_it(entry: dict[str, Any], limit: int) -> None:
    it = instance_type(entry, "us-west-2", ["us-west-2a"], Prices("us-west-2"))
    assert it.volume_limits == {EBS_DRIVER: limit}


def test_a_limit_never_goes_below_zero() -> None:
    assert ebs_attach_limit("nitro", nvme_disks=40) == 0


@pytest.mark.parametrize(
    ("name", "neuron", "accelerator"),
    [
        ("inf1.xlarge", 1, "inferentia"),  # InferenceAcceleratorInfo, as Karpenter v0.31 reads it
        ("inf2.48xlarge", 12, "inferentia2"),
        ("trn1.2xlarge", 1, "trainium"),  # NeuronInfo only: what EC2 says of Trainium
        ("trn1n.32xlarge", 16, "trainium"),
        ("trn2.48xlarge", 16, "trainium2"),
    ],
)
def test_neuron_devices_from_ec2s_own_description(name: str, neuron: int, accelerator: str) -> None:
    it = instance_type(ec2_instance_type(name), "us-east-1", ["us-east-1a"], Prices("us-east-1"))
    assert it.capacity[NEURON] == neuron and it.allocatable[NEURON] == neuron
    assert it.labels[L.INSTANCE_ACCELERATOR_NAME] == accelerator
    assert it.labels[L.INSTANCE_ACCELERATOR_MANUFACTURER] == "aws"
    assert it.labels[L.INSTANCE_ACCELERATOR_COUNT] == str(neuron)
    assert "nvidia.com/gpu" not in it.capacity


def test_gpus_are_no_neuron_devices() -> None:
    it = instance_type(ec2_instance_type("g5g.xlarge"), "us-east-1", ["us-east-1a"], Prices("us-east-1"))
    assert it.capacity["nvidia.com/gpu"] == 1 and NEURON not in it.capacity
    assert it.labels[L.INSTANCE_GPU_NAME] == "t4g" and it.labels[L.ARCH] == "arm64"
