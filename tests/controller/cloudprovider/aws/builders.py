"""Builders for the AWS provider tests: an account on moto, templates and node requests."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.clock import FakeClock
from controller.cloudprovider.aws.api import ApiError, AWSApi, Boto3Transport
from controller.cloudprovider.aws.provider import AWSCloudProvider, AWSSettings
from controller.cloudprovider.base import NodeRequest
from controller.core import labels as L
from controller.core.requirements import Requirements
from controller.scheduling.types import InstanceType, ProvisionerSpec
from tests.support.moto import REGION, MotoServer

CLUSTER = "test-cluster"
DISCOVERY = {"karpenter.sh/discovery": CLUSTER}


@dataclass
class Account:
    """What `make_account` created on moto."""

    vpc: str
    subnets: dict[str, str]  # zone → subnet id
    security_group: str
    amd64_ami: str
    arm64_ami: str


def _tags(kind: str, tags: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{"ResourceType": kind, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]


def make_account(
    moto: MotoServer, zones: Sequence[str] = ("us-east-1a", "us-east-1b"), region: str = REGION
) -> Account:
    ec2 = moto.client("ec2", region)
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = {}
    for i, zone in enumerate(zones):
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=zone,
                                   TagSpecifications=_tags("subnet", DISCOVERY))  # fmt: skip
        subnets[zone] = subnet["Subnet"]["SubnetId"]
    ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.100.0/24", AvailabilityZone=f"{region}c")  # not selected
    sg = ec2.create_security_group(GroupName="nodes", Description="karpy nodes", VpcId=vpc,
                                   TagSpecifications=_tags("security-group", DISCOVERY))["GroupId"]  # fmt: skip
    ec2.create_security_group(GroupName="other", Description="not selected", VpcId=vpc)
    amis = {}
    for arch in ("x86_64", "arm64"):
        image = ec2.describe_images(Owners=["amazon"], Filters=[{"Name": "architecture", "Values": [arch]}])["Images"][
            0
        ]
        ec2.create_tags(Resources=[image["ImageId"]], Tags=[{"Key": "karpy-test", "Value": "eks"}])
        amis[arch] = image["ImageId"]
    return Account(vpc, subnets, sg, amis["x86_64"], amis["arm64"])


def make_template(name: str = "default", **spec: Any) -> AWSNodeTemplate:
    spec = {
        "subnetSelector": dict(DISCOVERY),
        "securityGroupSelector": dict(DISCOVERY),
        "amiSelector": {"karpy-test": "eks"},
        **spec,
    }
    return AWSNodeTemplate.from_wire({"metadata": {"name": name}, "spec": spec})


class RecordingTransport:
    """The real boto3 transport (to moto), recording each call and optionally failing some."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.fail: dict[str, list[ApiError]] = {}
        self._lock = threading.Lock()

    def call(self, service: str, operation: str, params: Mapping[str, Any]) -> dict[str, Any]:
        # one call at a time: concurrent launches (batched or not) reach moto_server, whose
        # in-memory backend is not built for simultaneous writes
        with self._lock:
            self.calls.append((service, operation, dict(params)))
            queued = self.fail.get(operation)
            if queued:
                raise queued.pop(0)
            result: dict[str, Any] = self.inner.call(service, operation, params)
            return result

    def named(self, operation: str) -> list[dict[str, Any]]:
        return [params for _, op, params in self.calls if op == operation]


@dataclass
class Env:
    moto: MotoServer
    account: Account
    transport: RecordingTransport
    clock: FakeClock
    provider: AWSCloudProvider
    sleeps: list[float] = field(default_factory=list)


def make_provider(moto: MotoServer, region: str = REGION, **settings: Any) -> Env:
    account = make_account(moto, (f"{region}a", f"{region}b"), region)
    transport = RecordingTransport(Boto3Transport(region, moto.url))
    clock = FakeClock()
    sleeps: list[float] = []
    api = AWSApi(transport, sleep=sleeps.append)
    aws = AWSSettings(region=region, cluster_name=CLUSTER, cluster_endpoint="https://api.example:6443",
                      cluster_ca_bundle="Q0E=", cluster_dns_ip="10.100.0.10", **settings)  # fmt: skip
    provider = AWSCloudProvider(api, aws, clock, sleep=sleeps.append)
    return Env(moto, account, transport, clock, provider, sleeps)


def make_request(
    types: Sequence[InstanceType],
    names: Sequence[str],
    template: AWSNodeTemplate,
    capacity_types: Sequence[str] = (L.CAPACITY_TYPE_SPOT, L.CAPACITY_TYPE_ON_DEMAND),
    provisioner: str = "default",
) -> NodeRequest:
    reqs = Requirements.from_wire([{"key": L.CAPACITY_TYPE, "operator": "In", "values": list(capacity_types)}])
    options = tuple(it for it in types if it.name in names)
    spec = ProvisionerSpec(name=provisioner, requirements=reqs, labels={"team": "a"})
    return NodeRequest(provisioner, reqs, options, {}, spec, template)
