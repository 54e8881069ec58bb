"""AMI families: the EKS optimized AMIs' SSM parameters per architecture and accelerated or not
(Karpenter v0.31's DefaultAMIs), and what a template implies for the node's shape."""

from __future__ import annotations

import pytest

from controller.cloudprovider.aws.amifamily import AL2, BOTTLEROCKET, CUSTOM, UBUNTU, ssm_parameters

EKS = "/aws/service/eks/optimized-ami/1.27"
BR = "/aws/service/bottlerocket"
UBUNTU_PATH = "/aws/service/canonical/ubuntu/eks/20.04/1.27/stable/current"

PARAMETERS = {
    # family, architecture, accelerated (GPUs or Neuron) → SSM parameters
    (AL2, "amd64", False): (f"{EKS}/amazon-linux-2/recommended/image_id",),
    (AL2, "amd64", True): (f"{EKS}/amazon-linux-2-gpu/recommended/image_id",),
    (AL2, "arm64", False): (f"{EKS}/amazon-linux-2-arm64/recommended/image_id",),
    (AL2, "arm64", True): (),  # v0.31 has no AL2 AMI for accelerated arm64 types (g5g)
    (BOTTLEROCKET, "amd64", False): (f"{BR}/aws-k8s-1.27/x86_64/latest/image_id",),
    (BOTTLEROCKET, "amd64", True): (f"{BR}/aws-k8s-1.27-nvidia/x86_64/latest/image_id",),
    (BOTTLEROCKET, "arm64", False): (f"{BR}/aws-k8s-1.27/arm64/latest/image_id",),
    (BOTTLEROCKET, "arm64", True): (f"{BR}/aws-k8s-1.27-nvidia/arm64/latest/image_id",),
    (UBUNTU, "amd64", False): (f"{UBUNTU_PATH}/amd64/hvm/ebs-gp2/ami-id",),
    (UBUNTU, "amd64", True): (f"{UBUNTU_PATH}/amd64/hvm/ebs-gp2/ami-id",),
    (UBUNTU, "arm64", True): (f"{UBUNTU_PATH}/arm64/hvm/ebs-gp2/ami-id",),
    (CUSTOM, "amd64", True): (),
}


@pytest.mark.parametrize(
    ("key", "expected"),
    [pytest.param(k, v, id=f"{k[0]}-{k[1]}-{'accelerated' if k[2] else 'plain'}") for k, v in PARAMETERS.items()],
)
def test_the_ssm_parameters_of_each_family_architecture_and_accelerator(
    key: tuple[str, str, bool], expected: tuple[str, ...]
) -> None:
    family, arch, accelerated = key
    assert tuple(ssm_parameters(family, "1.27", arch, accelerated)) == expected
