"""EC2 instance-type entries → karpy's instance types (`controller/cloudprovider/aws/instancetypes.py`):
the EBS attachment limit a new node offers the scheduler."""

from __future__ import annotations

from typing import Any

import pytest

from controller.cloudprovider.aws.instancetypes import EBS_DRIVER, ebs_attach_limit, instance_type
from controller.cloudprovider.aws.pricing import Prices


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
