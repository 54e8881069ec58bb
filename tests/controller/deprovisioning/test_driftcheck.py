"""Asking the cloud about drift: which nodes, how often, and what an error means."""

from __future__ import annotations

import copy
import threading

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.clock import FakeClock
from controller.cloudprovider.base import Instance
from controller.cloudprovider.drift import Drift, DriftReason
from controller.cloudprovider.errors import CloudProviderError
from controller.deprovisioning.driftcheck import DriftChecker
from controller.kube.resources import AWSNODETEMPLATES, NODES, PROVISIONERS, WATCHED
from controller.provisioning.nodetemplates import instance_types_for
from controller.scheduling.types import InstanceType
from controller.state.cluster import ClusterState
from tests.builders.deprovisioning import CATALOG
from tests.builders.wire import make_awsnodetemplate, make_node, make_provisioner
from tests.fakes.cloudprovider import FakeCloudProvider
from tests.fakes.kube import FakeKube

AMI = Drift(DriftReason.AMI, "AMI ami-1 is no longer selected")


class World:
    def __init__(self, enabled: bool = True) -> None:
        self.clock = FakeClock()
        self.kube = FakeKube(self.clock)
        self.state = ClusterState(self.clock)
        self.cloud = FakeCloudProvider(CATALOG, self.clock)
        self.checker = DriftChecker(self.cloud, self.clock, enabled, check_seconds=300)
        self.kube.put(AWSNODETEMPLATES, make_awsnodetemplate("nodes"))
        self.kube.put(PROVISIONERS, make_provisioner(providerRef={"name": "nodes"}))

    def node(self, name: str, provisioner: str = "default") -> None:
        pid = f"fake:///zone-a/{name}"
        self.kube.put(NODES, make_node(name, provisioner, provider_id=pid, instance_type="medium"))
        self.cloud.add(Instance(pid, name, "medium", "zone-a", "on-demand", 0.2, provisioner, 0.0))

    def ask(self) -> dict[str, Drift | None]:
        for kind in WATCHED:
            self.state.replace(kind.name, copy.deepcopy(self.kube.items(kind)))
        snap = self.state.snapshot()
        return dict(self.checker.inputs(snap, instance_types_for(snap, self.cloud)).cloud)


def test_each_owned_node_is_asked_once_per_period() -> None:
    world = World()
    world.node("n1")
    world.node("n2")
    world.cloud.drifted["fake:///zone-a/n1"] = AMI
    assert world.ask() == {"n1": AMI, "n2": None}
    assert sorted(world.cloud.drift_calls) == ["fake:///zone-a/n1", "fake:///zone-a/n2"]
    world.clock.step(299)
    assert world.ask() == {"n1": AMI, "n2": None}
    assert len(world.cloud.drift_calls) == 2  # answers kept
    world.clock.step(2)
    world.ask()
    assert len(world.cloud.drift_calls) == 4  # Karpenter's 5-minute re-check


def test_a_changed_template_is_asked_about_at_once() -> None:
    world = World()
    world.node("n1")
    world.ask()
    world.kube.put(AWSNODETEMPLATES, make_awsnodetemplate("nodes", amiSelector={"aws-ids": "ami-2"}))
    world.cloud.drifted["fake:///zone-a/n1"] = AMI
    assert world.ask() == {"n1": AMI}
    template = world.cloud.instance_type_calls[-1][1]
    assert isinstance(template, AWSNodeTemplate) and template.ami_selector == {"aws-ids": "ami-2"}


def test_an_error_leaves_the_node_unknown() -> None:
    world = World()
    world.node("n1")
    world.cloud.drift_error = CloudProviderError("ec2 DescribeImages: throttled")
    assert world.ask() == {}


def test_no_template_or_an_inline_one_is_never_cloud_drifted_and_off_asks_nothing() -> None:
    world = World()
    world.kube.put(
        PROVISIONERS,
        make_provisioner("inline", provider={"subnetSelector": {"a": "b"}, "securityGroupSelector": {"a": "b"}}),
    )
    world.kube.put(PROVISIONERS, make_provisioner("bare"))
    world.node("n1", "inline")
    world.node("n2", "bare")
    assert world.ask() == {"n1": None, "n2": None}
    assert world.cloud.drift_calls == []
    off = World(enabled=False)
    off.node("n1")
    assert off.ask() == {} and off.cloud.drift_calls == []
    snap = off.state.snapshot()
    found = off.checker.inputs(snap, instance_types_for(snap, off.cloud))
    assert (found.enabled, dict(found.templates), dict(found.cloud)) == (False, {}, {})


def test_the_nodes_due_are_asked_at_once_so_the_provider_can_merge_their_lookups() -> None:
    class Together(FakeCloudProvider):
        """Answers only once all three questions are in flight (asked one by one, it times out)."""

        barrier = threading.Barrier(3, timeout=10)

        def is_drifted(
            self, provider_id: str, instance_type: InstanceType, node_template: AWSNodeTemplate
        ) -> Drift | None:
            self.barrier.wait()
            return super().is_drifted(provider_id, instance_type, node_template)

    world = World()
    world.cloud = Together(CATALOG, world.clock)
    world.checker = DriftChecker(world.cloud, world.clock, True, check_seconds=300)
    for name in ("n1", "n2", "n3"):
        world.node(name)
    world.cloud.drifted["fake:///zone-a/n2"] = AMI
    assert world.ask() == {"n1": None, "n2": AMI, "n3": None}
