"""The controller launches what `karpy simulate` decides (issue 9, bug 2).

One function (`scheduling.instancetypes.launch_order`) picks a new node's launch for the
scheduler's simulated `Launch` and for every cloud provider's `create()`: metal and accelerator
types are launched only when nothing else in the options fits (spec §5.9).
"""

from __future__ import annotations

from controller.clock import FakeClock
from controller.cloudprovider.base import NodeRequest
from tests.builders.scheduling import make_instance_type, make_pod, run
from tests.fakes.cloudprovider import FakeCloudProvider


def test_a_cpu_only_pod_gets_no_gpu_type_even_when_its_spot_offering_is_cheaper() -> None:
    gpu = make_instance_type("g4dn.xlarge", cpu=4, memory_gib=16, gpus=1, price=0.53, spot_price=0.05)
    plain = make_instance_type("m5.xlarge", cpu=4, memory_gib=16, price=0.19)
    result = run([make_pod("web", cpu="1")], types=[gpu, plain])
    (node,) = result.new_nodes
    assert node.launch is not None and node.launch.instance_type.name == "m5.xlarge"  # what simulate shows

    cloud = FakeCloudProvider([gpu, plain], clock=FakeClock())
    instance = cloud.create(NodeRequest.from_new_node(node))  # what the controller launches
    assert (instance.instance_type, instance.capacity_type) == ("m5.xlarge", "on-demand")


def test_a_gpu_pod_still_gets_the_gpu_type() -> None:
    gpu = make_instance_type("g4dn.xlarge", cpu=4, memory_gib=16, gpus=1, price=0.53, spot_price=0.05)
    plain = make_instance_type("m5.xlarge", cpu=4, memory_gib=16, price=0.19)
    result = run([make_pod("train", cpu="1", gpus=1)], types=[gpu, plain])
    (node,) = result.new_nodes
    cloud = FakeCloudProvider([gpu, plain], clock=FakeClock())
    instance = cloud.create(NodeRequest.from_new_node(node))
    assert node.launch is not None
    assert instance.instance_type == node.launch.instance_type.name == "g4dn.xlarge"
    assert instance.capacity_type == node.launch.capacity_type == "spot"
