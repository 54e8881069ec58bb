"""An AWS-shaped catalog as one provisioner sees it through its node template.

Pure. `for_provisioner(types, kubelet, node_template)` applies the provisioner's
kubeletConfiguration and the AWSNodeTemplate's AMI family and block devices (`amifamily.node_shape`)
to every type with the formulas of `overhead.py`. The AWS provider, the simulated provider and
`karpy simulate --catalog FILE` all go through here, so a node's pods, ephemeral storage and
overhead are the same whichever provider computes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.cloudprovider.aws.amifamily import node_shape
from controller.cloudprovider.aws.overhead import VM_MEMORY_OVERHEAD_PERCENT, apply_kubelet
from controller.scheduling.types import InstanceType, KubeletSpec


def for_provisioner(
    types: Iterable[InstanceType],
    kubelet: KubeletSpec | None,
    node_template: AWSNodeTemplate | None,
    vm_memory_overhead_percent: float = VM_MEMORY_OVERHEAD_PERCENT,
) -> tuple[InstanceType, ...]:
    """`vm_memory_overhead_percent`: Karpenter's `aws.vmMemoryOverheadPercent` (0.075)."""
    shape = replace(node_shape(node_template), vm_memory_overhead_percent=vm_memory_overhead_percent)
    return tuple(apply_kubelet(it, kubelet, shape) for it in types)
