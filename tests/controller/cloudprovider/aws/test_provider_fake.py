"""The AWS provider at the adapter seam, for what moto cannot do: insufficient capacity and the
fallback within one launch, the ICE cache expiring, throttling retried, prices (Price List
documents, spot history, a malformed document), the EKS SSM parameters, typed errors."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import REGISTRY

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.clock import FakeClock
from controller.cloudprovider.aws.api import ApiError, AWSApi, AWSError
from controller.cloudprovider.aws.pricing import Prices
from controller.cloudprovider.aws.provider import AWSCloudProvider, AWSSettings
from controller.cloudprovider.errors import CloudProviderError, InsufficientCapacityError, ThrottledError
from controller.core import labels as L
from tests.controller.cloudprovider.aws.builders import make_request
from tests.fakes.aws import FakeTransport, product
from tests.support.moto import ec2_instance_type

PRICES = {"onDemand": {"us-east-1": {"m5.large": 0.096, "c5.large": 0.085, "m5.xlarge": 0.192}}}
TEMPLATE = AWSNodeTemplate.from_wire(
    {
        "metadata": {"name": "default"},
        "spec": {"subnetSelector": {"a": "b"}, "securityGroupSelector": {"a": "b"}, "amiSelector": {"a": "b"}},
    }
)


def make(ice_ttl: float = 45.0, **settings: object) -> tuple[FakeTransport, AWSCloudProvider, FakeClock, list[float]]:
    transport = FakeTransport()
    clock = FakeClock()
    sleeps: list[float] = []
    aws = AWSSettings(region="us-east-1", cluster_name="c", **settings)  # type: ignore[arg-type]
    provider = AWSCloudProvider(
        AWSApi(transport, sleep=sleeps.append),
        aws,
        clock,
        Prices("us-east-1", PRICES),
        ice_ttl=ice_ttl,
        sleep=sleeps.append,
    )
    return transport, provider, clock, sleeps


def test_spot_out_of_capacity_falls_back_to_another_type_then_to_on_demand() -> None:
    transport, provider, _, _ = make()
    types = provider.get_instance_types(None, TEMPLATE)
    for it in ("c5.large", "m5.large"):
        for zone in transport.zones:
            transport.out_of_capacity.add((it, zone, "spot"))
    inst = provider.create(make_request(types, ["c5.large", "m5.large"], TEMPLATE))
    fleets = transport.named("create_fleet")
    assert [f["TargetCapacitySpecification"]["DefaultTargetCapacityType"] for f in fleets] == ["spot", "on-demand"]
    assert inst.capacity_type == L.CAPACITY_TYPE_ON_DEMAND and inst.instance_type == "c5.large"
    # the spot offerings are cached unavailable: the catalog shows it, a new launch goes on-demand at once
    c5 = next(it for it in provider.get_instance_types(None, TEMPLATE) if it.name == "c5.large")
    assert not any(o.available for o in c5.offerings if o.capacity_type == "spot")
    provider.create(make_request(types, ["c5.large"], TEMPLATE))
    assert (
        transport.named("create_fleet")[-1]["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    )


def test_out_of_capacity_for_one_type_tries_the_others_in_the_same_launch() -> None:
    transport, provider, _, _ = make()
    types = provider.get_instance_types(None, TEMPLATE)
    transport.out_of_capacity |= {("c5.large", z, "on-demand") for z in transport.zones}
    inst = provider.create(make_request(types, ["c5.large", "m5.large"], TEMPLATE, capacity_types=["on-demand"]))
    assert inst.instance_type == "m5.large"
    first = transport.named("create_fleet")[0]
    order = [o["InstanceType"] for c in first["LaunchTemplateConfigs"] for o in c["Overrides"]]
    assert order[0] == "c5.large"  # cheapest first


def test_everything_out_of_capacity_is_an_insufficient_capacity_error() -> None:
    transport, provider, _, _ = make()
    types = provider.get_instance_types(None, TEMPLATE)
    transport.out_of_capacity |= {("m5.large", z, ct) for z in transport.zones for ct in ("spot", "on-demand")}
    with pytest.raises(InsufficientCapacityError, match="InsufficientInstanceCapacity"):
        provider.create(make_request(types, ["m5.large"], TEMPLATE))


def test_the_insufficient_capacity_cache_expires() -> None:
    transport, provider, clock, _ = make(ice_ttl=45.0)
    types = provider.get_instance_types(None, TEMPLATE)
    transport.out_of_capacity |= {("m5.large", z, "spot") for z in transport.zones}
    provider.create(make_request(types, ["m5.large"], TEMPLATE))
    transport.out_of_capacity.clear()
    clock.step(44)
    provider.create(make_request(types, ["m5.large"], TEMPLATE))
    assert (
        transport.named("create_fleet")[-1]["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    )
    clock.step(2)
    m5 = next(it for it in provider.get_instance_types(None, TEMPLATE) if it.name == "m5.large")
    assert all(o.available for o in m5.offerings)
    provider.create(make_request(types, ["m5.large"], TEMPLATE))
    assert transport.named("create_fleet")[-1]["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "spot"


def test_the_instance_type_cache_refreshes_after_five_minutes() -> None:
    transport, provider, clock, _ = make()
    provider.get_instance_types(None, TEMPLATE)
    transport.instance_types = transport.instance_types[:1]
    clock.step(299)
    provider.refresh()
    assert len(provider.get_instance_types(None, TEMPLATE)) == 3
    clock.step(2)
    provider.refresh()
    assert [it.name for it in provider.get_instance_types(None, TEMPLATE)] == ["m5.large"]


def test_throttling_is_retried_with_backoff() -> None:
    transport, provider, _, sleeps = make()
    transport.errors["describe_instance_types"] = [ApiError("RequestLimitExceeded", "slow down")] * 2
    assert provider.get_instance_types(None, TEMPLATE)
    assert sleeps[:2] == [0.2, 0.4]


def test_throttling_past_the_last_retry_is_a_throttled_error_not_a_failure() -> None:
    transport, provider, _, sleeps = make()
    types = provider.get_instance_types(None, TEMPLATE)
    transport.errors["create_fleet"] = [ApiError("RequestLimitExceeded", "Request limit exceeded.")] * 5
    labels = {"provider": "aws", "operation": "create_fleet"}
    names = [f"karpy_cloudprovider_api_{n}_total" for n in ("calls", "throttled", "throttle_seconds")]
    before = [REGISTRY.get_sample_value(n, labels) or 0.0 for n in names]
    with pytest.raises(ThrottledError, match=r"ec2 CreateFleet \(provisioner default\): RequestLimitExceeded") as err:
        provider.create(make_request(types, ["m5.large"], TEMPLATE))
    assert isinstance(err.value, AWSError) and err.value.retry_after == pytest.approx(6.4)
    assert sleeps[-4:] == [0.2, 0.4, 0.8, 1.6] and len(transport.named("create_fleet")) == 5  # tried 5 times
    after = [REGISTRY.get_sample_value(n, labels) or 0.0 for n in names]
    assert [a - b for a, b in zip(after, before, strict=True)] == pytest.approx([5, 5, 3.0])  # on /metrics
    assert provider.create(make_request(types, ["m5.large"], TEMPLATE)).instance_type == "m5.large"


def test_errors_name_the_call_and_the_resource() -> None:
    transport, provider, _, _ = make()
    types = provider.get_instance_types(None, TEMPLATE)
    transport.errors["create_fleet"] = [ApiError("UnauthorizedOperation", "not allowed")]
    with pytest.raises(AWSError, match=r"ec2 CreateFleet \(provisioner default\): UnauthorizedOperation: not allowed"):
        provider.create(make_request(types, ["m5.large"], TEMPLATE))
    transport.errors["terminate_instances"] = [ApiError("UnauthorizedOperation", "no")]
    inst = provider.create(make_request(types, ["m5.large"], TEMPLATE))
    with pytest.raises(AWSError, match=r"ec2 TerminateInstances \(i-"):
        provider.delete(inst.provider_id)


def test_prices_from_the_api_and_spot_history_and_a_malformed_document_ignored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    transport, provider, _, _ = make()
    before = next(it for it in provider.get_instance_types(None, TEMPLATE) if it.name == "m5.large")
    assert {o.capacity_type: o.price for o in before.offerings if o.zone == "us-east-1b"} == {
        "spot": 0.096,
        "on-demand": 0.096,
    }  # the price file's; spot = on-demand until spot prices arrive
    transport.products = [product("m5.large", "0.1"), "{not json", product("c5.large", "0.09"), '{"product": {}}']
    transport.spot_history = [
        {"InstanceType": "m5.large", "AvailabilityZone": "us-east-1a", "SpotPrice": "0.03", "Timestamp": 1},
        {"InstanceType": "m5.large", "AvailabilityZone": "us-east-1a", "SpotPrice": "0.04", "Timestamp": 2},
    ]
    with caplog.at_level(logging.WARNING):
        provider.refresh(force=True)
    assert sum("ignoring price document" in r.message for r in caplog.records) == 2
    m5 = next(it for it in provider.get_instance_types(None, TEMPLATE) if it.name == "m5.large")
    prices = {(o.zone, o.capacity_type): o.price for o in m5.offerings}
    assert prices[("us-east-1a", "spot")] == 0.04  # the latest
    assert prices[("us-east-1b", "spot")] == 0.1 and prices[("us-east-1a", "on-demand")] == 0.1
    m5xl = next(it for it in provider.get_instance_types(None, TEMPLATE) if it.name == "m5.xlarge")
    assert not any(o.available for o in m5xl.offerings if o.capacity_type == "on-demand")  # the API no longer lists it


def test_amis_from_the_eks_ssm_parameters() -> None:
    transport, provider, _, _ = make(kubernetes_version="1.27")
    transport.parameters = {
        "/aws/service/eks/optimized-ami/1.27/amazon-linux-2/recommended/image_id": "ami-amd",
        "/aws/service/eks/optimized-ami/1.27/amazon-linux-2-arm64/recommended/image_id": "ami-arm",
    }
    template = AWSNodeTemplate.from_wire(
        {"metadata": {"name": "t"}, "spec": {"subnetSelector": {"a": "b"}, "securityGroupSelector": {"a": "b"}}}
    )
    amis = provider.resolver.amis(template)
    assert {(a.id, a.arch) for a in amis} == {("ami-amd", "amd64"), ("ami-arm", "arm64")}
    types = provider.get_instance_types(None, template)
    provider.create(make_request(types, ["m5.large"], template))
    (lt,) = transport.launch_templates.values()
    assert lt["Data"]["ImageId"] == "ami-amd"


ACCELERATED = {
    # type → (architecture, accelerated: GPUs or Neuron)
    "m5.large": ("x86_64", False),
    "g4dn.xlarge": ("x86_64", True),  # NVIDIA
    "inf1.xlarge": ("x86_64", True),  # Inferentia (InferenceAcceleratorInfo)
    "trn1.2xlarge": ("x86_64", True),  # Trainium (NeuronInfo)
    "m6g.large": ("arm64", False),
    "g5g.xlarge": ("arm64", True),  # NVIDIA on Graviton
}


def accelerated_provider(family: str) -> tuple[FakeTransport, AWSCloudProvider, AWSNodeTemplate]:
    transport, provider, _, _ = make(kubernetes_version="1.27")
    transport.instance_types = [ec2_instance_type(name) for name in ACCELERATED]
    provider.prices = Prices("us-east-1", {"onDemand": {"us-east-1": dict.fromkeys(ACCELERATED, 1.0)}})
    transport.parameters = {
        "/aws/service/bottlerocket/aws-k8s-1.27/x86_64/latest/image_id": "ami-br-x86",
        "/aws/service/bottlerocket/aws-k8s-1.27-nvidia/x86_64/latest/image_id": "ami-br-nvidia-x86",
        "/aws/service/bottlerocket/aws-k8s-1.27/arm64/latest/image_id": "ami-br-arm",
        "/aws/service/bottlerocket/aws-k8s-1.27-nvidia/arm64/latest/image_id": "ami-br-nvidia-arm",
        "/aws/service/eks/optimized-ami/1.27/amazon-linux-2/recommended/image_id": "ami-al2",
        "/aws/service/eks/optimized-ami/1.27/amazon-linux-2-gpu/recommended/image_id": "ami-al2-gpu",
        "/aws/service/eks/optimized-ami/1.27/amazon-linux-2-arm64/recommended/image_id": "ami-al2-arm",
    }
    template = AWSNodeTemplate.from_wire({
        "metadata": {"name": family.lower()},
        "spec": {"amiFamily": family, "subnetSelector": {"a": "b"}, "securityGroupSelector": {"a": "b"}},
    })  # fmt: skip
    return transport, provider, template


def launched_image(transport: FakeTransport, provider: AWSCloudProvider, template: AWSNodeTemplate, name: str) -> str:
    types = provider.get_instance_types(None, template)
    instance = provider.create(make_request(types, [name], template, [L.CAPACITY_TYPE_ON_DEMAND]))
    assert instance.instance_type == name
    (fleet,) = transport.named("create_fleet")[-1:]
    (config,) = fleet["LaunchTemplateConfigs"]
    lt = transport.launch_templates[config["LaunchTemplateSpecification"]["LaunchTemplateName"]]
    return str(lt["Data"]["ImageId"])


@pytest.mark.parametrize(
    ("name", "image"),
    [
        ("m5.large", "ami-br-x86"),
        ("g4dn.xlarge", "ami-br-nvidia-x86"),
        ("inf1.xlarge", "ami-br-nvidia-x86"),  # Karpenter v0.31: accelerator count → the nvidia variant
        ("trn1.2xlarge", "ami-br-nvidia-x86"),
        ("m6g.large", "ami-br-arm"),
        ("g5g.xlarge", "ami-br-nvidia-arm"),
    ],
)
def test_bottlerocket_boots_gpu_and_neuron_types_from_its_nvidia_variant(name: str, image: str) -> None:
    transport, provider, template = accelerated_provider("Bottlerocket")
    assert launched_image(transport, provider, template, name) == image


@pytest.mark.parametrize(
    ("name", "image"),
    [
        ("m5.large", "ami-al2"),
        ("g4dn.xlarge", "ami-al2-gpu"),
        ("inf1.xlarge", "ami-al2-gpu"),
        ("trn1.2xlarge", "ami-al2-gpu"),
        ("m6g.large", "ami-al2-arm"),
    ],
)
def test_al2_boots_accelerated_x86_types_from_its_gpu_ami(name: str, image: str) -> None:
    transport, provider, template = accelerated_provider("AL2")
    assert launched_image(transport, provider, template, name) == image


def test_al2_has_no_ami_for_accelerated_arm64_types() -> None:
    """Karpenter v0.31's AL2 family offers amazon-linux-2-arm64 to arm64 types without GPUs only:
    a g5g is never booted without its NVIDIA driver."""
    transport, provider, template = accelerated_provider("AL2")
    types = provider.get_instance_types(None, template)
    with pytest.raises(CloudProviderError, match="no instance types satisfy requirements of amis"):
        provider.create(make_request(types, ["g5g.xlarge"], template, [L.CAPACITY_TYPE_ON_DEMAND]))
    assert transport.named("create_fleet") == []


def test_types_dearer_than_the_cheapest_on_demand_offering_are_left_out_of_a_spot_fleet() -> None:
    transport, provider, _, _ = make()
    transport.spot_history = [
        {"InstanceType": "m5.xlarge", "AvailabilityZone": z, "SpotPrice": "0.15", "Timestamp": 1}
        for z in transport.zones
    ] + [
        {"InstanceType": "c5.large", "AvailabilityZone": z, "SpotPrice": "0.03", "Timestamp": 1}
        for z in transport.zones
    ]
    provider.refresh(force=True)
    types = provider.get_instance_types(None, TEMPLATE)
    provider.create(make_request(types, ["m5.xlarge", "c5.large"], TEMPLATE))
    fleet = transport.named("create_fleet")[-1]
    # m5.xlarge spot (0.15) costs more than c5.large on-demand (0.085): not offered to the fleet
    assert {o["InstanceType"] for c in fleet["LaunchTemplateConfigs"] for o in c["Overrides"]} == {"c5.large"}


def test_an_ami_tagged_with_a_well_known_label_serves_only_matching_types() -> None:
    from controller.cloudprovider.aws.resolver import Ami, ami_for

    special = Ami("ami-c5", "amd64", None, "2024-02-01", labels=((L.INSTANCE_TYPE, "c5.large"),))
    plain = Ami("ami-any", "amd64", None, "2024-01-01")
    arm = Ami("ami-arm", "arm64", None, "2024-01-01")
    amis = [special, plain, arm]
    assert ami_for(amis, {L.ARCH: "amd64", L.INSTANCE_TYPE: "c5.large"}, False) is special
    assert ami_for(amis, {L.ARCH: "amd64", L.INSTANCE_TYPE: "m5.large"}, False) is plain
    assert ami_for(amis, {L.ARCH: "arm64", L.INSTANCE_TYPE: "m6g.large"}, False) is arm
    assert ami_for([special], {L.ARCH: "amd64", L.INSTANCE_TYPE: "m5.large"}, False) is None


def test_the_access_check_is_a_dry_run() -> None:
    transport, provider, _, _ = make()
    transport.errors["describe_instance_types"] = [ApiError("DryRunOperation", "Request would have succeeded")]
    assert provider.check_access() == ""
    assert transport.named("describe_instance_types")[-1]["DryRun"] is True
    transport.errors["describe_instance_types"] = [ApiError("UnauthorizedOperation", "You are not authorized")]
    assert "ec2 DescribeInstanceTypes (connectivity check): UnauthorizedOperation" in provider.check_access()
