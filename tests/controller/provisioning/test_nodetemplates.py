"""providerRef is read: the AWSNodeTemplate a Provisioner names shapes its nodes, in provisioning.

Regression for "providerRef is never read": with the simulated cloud provider (whose catalog is
AWS-shaped) a Bottlerocket template ignores podsPerCore (more pods per node than AL2), block
device mappings set the node's ephemeral storage, and a missing template leaves the pods pending
with an event naming it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.clock import FakeClock
from controller.cloudprovider.errors import CloudProviderError
from controller.cloudprovider.simulated.provider import SimulatedCloudProvider
from controller.core import labels as L
from controller.core.quantity import int_value
from controller.decisions import DecisionLog
from controller.events import EventRecorder
from controller.kube.resources import AWSNODETEMPLATES, NODES, PODS, PROVISIONERS
from controller.provisioning.controller import ProvisioningController
from controller.provisioning.nodetemplates import instance_types_for
from controller.state.cluster import ClusterState
from tests.builders.wire import make_pod, make_provisioner
from tests.fakes.cloudprovider import FakeCloudProvider
from tests.fakes.kube import FakeKube
from tests.fakes.world import sync_from

GIB = 2**30
M5_XLARGE = {"key": L.INSTANCE_TYPE, "operator": "In", "values": ["m5.xlarge"]}
ON_DEMAND = {"key": L.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}


def eph_pod(name: str, storage: str) -> dict[str, Any]:
    pod: dict[str, Any] = make_pod(name, cpu="1")
    pod["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = storage
    return pod


def template(name: str, **spec: Any) -> dict[str, Any]:
    spec = {"subnetSelector": {"karpenter.sh/discovery": "c"}, "securityGroupSelector": {"a": "b"}, **spec}
    return {
        "apiVersion": "karpenter.k8s.aws/v1alpha1",
        "kind": "AWSNodeTemplate",
        "metadata": {"name": name},
        "spec": spec,
    }


class Env:
    def __init__(self, tmp_path: Path, cloud: Any = None) -> None:
        self.clock = FakeClock()
        self.kube = FakeKube(self.clock)
        self.cloud = cloud or SimulatedCloudProvider(tmp_path / "cloud.db", self.clock, node_label="")
        self.state = ClusterState(self.clock)
        recorder = EventRecorder(self.kube, self.clock)
        self.ctrl = ProvisioningController(
            self.state, self.kube, self.cloud, self.clock, recorder, DecisionLog(self.clock)
        )

    def provisioner(self, ref: str | None, **spec: Any) -> None:
        if ref is not None:
            spec["providerRef"] = {"name": ref}
        self.kube.put(PROVISIONERS, make_provisioner("default", requirements=[M5_XLARGE, ON_DEMAND], **spec))

    def sync(self) -> None:
        sync_from(self.state, self.kube)

    def batch(self) -> None:
        self.sync()
        self.ctrl.reconcile()
        self.clock.step(1.1)
        self.ctrl.reconcile()


def test_bottlerocket_ignores_pods_per_core_and_al2_applies_it(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.kube.put(AWSNODETEMPLATES, template("al2"))
    env.kube.put(AWSNODETEMPLATES, template("br", amiFamily="Bottlerocket"))
    pods: dict[str, int] = {}
    for ref in ("al2", "br"):
        env.provisioner(ref, kubeletConfiguration={"podsPerCore": 2})
        env.sync()
        (types,) = instance_types_for(env.state.snapshot(), env.cloud).types.values()
        (m5,) = [it for it in types if it.name == "m5.xlarge"]
        pods[ref] = m5.capacity["pods"]
    assert pods == {"al2": 8, "br": 58}  # 2 × 4 vCPU vs the ENI limit 4 × (15 − 1) + 2


def test_block_device_mappings_set_the_nodes_ephemeral_storage(tmp_path: Path) -> None:
    env = Env(tmp_path)
    big = [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100Gi", "volumeType": "gp3"}}]
    env.kube.put(AWSNODETEMPLATES, template("big", blockDeviceMappings=big))
    env.provisioner("big")
    env.kube.put(PODS, eph_pod("p0", "50Gi"))
    env.batch()
    (node,) = env.kube.items(NODES)
    assert node["metadata"]["labels"][L.INSTANCE_TYPE] == "m5.xlarge"
    assert int_value(node["status"]["capacity"]["ephemeral-storage"]) == 100 * GIB
    # 100Gi − 1Gi kube-reserved − 10 % eviction threshold
    assert int_value(node["status"]["allocatable"]["ephemeral-storage"]) == 89 * GIB


def test_default_volume_leaves_a_50gi_pod_pending(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.kube.put(AWSNODETEMPLATES, template("small"))
    env.provisioner("small")
    env.kube.put(PODS, eph_pod("p0", "50Gi"))
    env.batch()
    assert env.kube.items(NODES) == []


def test_a_missing_template_leaves_pods_pending_with_an_event_naming_it(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.provisioner("nope")
    env.kube.put(PODS, make_pod("p0", cpu="1"))
    env.batch()
    assert env.kube.items(NODES) == []
    messages = [e["message"] for e in env.kube.events if e["reason"] == "FailedScheduling"]
    assert messages and "AWSNodeTemplate 'nope'" in messages[0]
    # once the template exists, the same pod gets its node
    env.kube.put(AWSNODETEMPLATES, template("nope"))
    env.clock.step(10)
    env.batch()
    assert len(env.kube.items(NODES)) == 1


def test_a_cloud_error_listing_types_leaves_pods_pending_with_the_cause(tmp_path: Path) -> None:
    cloud = FakeCloudProvider()
    cloud.instance_types_error = CloudProviderError("no subnets matched selector {'a': 'b'}")
    env = Env(tmp_path, cloud)
    env.kube.put(AWSNODETEMPLATES, template("t"))
    env.provisioner("t")
    env.kube.put(PODS, make_pod("p0", cpu="1"))
    env.batch()
    assert env.kube.items(NODES) == []
    messages = [e["message"] for e in env.kube.events if e["reason"] == "FailedScheduling"]
    assert messages and "no subnets matched" in messages[0]
