"""AWSNodeTemplate status: what each template resolves to, and a Ready condition naming what is missing."""

from __future__ import annotations

from typing import Any

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.cloudprovider.errors import CloudProviderError
from controller.kube.resources import AWSNODETEMPLATES
from controller.nodetemplatestatus import NodeTemplateStatusController
from tests.fakes.world import World


class Cloud:
    def __init__(self) -> None:
        self.answers: dict[str, dict[str, Any]] = {}
        self.down = False

    def template_status(self, template: AWSNodeTemplate) -> dict[str, Any]:
        if self.down:
            raise CloudProviderError("ec2 DescribeSubnets: RequestExpired")
        return self.answers[template.name]


def node_template(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "karpenter.k8s.aws/v1alpha1", "kind": "AWSNodeTemplate", "metadata": {"name": name},
            "spec": {"subnetSelector": {"a": "b"}, **spec}}  # fmt: skip


RESOLVED = {
    "subnets": [{"id": "subnet-1", "zone": "us-west-2a"}],
    "securityGroups": [{"id": "sg-1"}],
    "amis": [{"id": "ami-1", "name": "eks", "requirements": []}],
    "problems": [],
}


def setup() -> tuple[World, Cloud, NodeTemplateStatusController]:
    world, cloud = World.make(), Cloud()
    world.put(AWSNODETEMPLATES, node_template("good"), node_template("no-profile"))
    cloud.answers = {
        "good": RESOLVED,
        "no-profile": {**RESOLVED, "problems": ["no instance profile: set spec.instanceProfile"]},
    }
    world.sync()
    return world, cloud, NodeTemplateStatusController(world.state, world.kube, cloud)


def status_of(world: World, name: str) -> dict[str, Any]:
    obj = world.kube.find(AWSNODETEMPLATES, name)
    assert obj is not None
    return dict(obj.get("status") or {})


def test_status_carries_what_the_template_resolves_to_and_why_it_is_not_ready() -> None:
    world, cloud, ctrl = setup()
    assert ctrl.reconcile() == ["good", "no-profile"]
    good = status_of(world, "good")
    assert good["subnets"] == RESOLVED["subnets"] and good["amis"][0]["id"] == "ami-1"
    assert good["conditions"][0]["status"] == "True"
    (bad,) = status_of(world, "no-profile")["conditions"]
    assert (bad["status"], bad["reason"]) == ("False", "ResolutionFailed") and "no instance profile" in bad["message"]
    world.sync()
    assert ctrl.reconcile() == []  # unchanged: nothing written
    cloud.answers["no-profile"] = RESOLVED
    world.step(30)
    world.sync()
    assert ctrl.reconcile() == ["no-profile"]
    (fixed,) = status_of(world, "no-profile")["conditions"]
    assert fixed["status"] == "True" and fixed["lastTransitionTime"] != bad["lastTransitionTime"]


def test_an_unreadable_spec_is_named_and_a_cloud_outage_changes_nothing() -> None:
    world, cloud, ctrl = setup()
    broken = node_template("broken")
    broken["spec"]["subnetSelector"] = "not a map"  # the webhook refuses it; an object stored before may have it
    world.put(AWSNODETEMPLATES, broken)
    world.sync()
    cloud.down = True
    assert ctrl.reconcile() == ["broken"]  # the others wait for the cloud; their status stays
    (condition,) = status_of(world, "broken")["conditions"]
    assert condition["reason"] == "InvalidSpec" and "could not be read" in condition["message"]
    assert status_of(world, "good") == {}
