"""The launch plan and the CreateFleet request (pure)."""

from __future__ import annotations

from controller.cloudprovider.aws.fleet import fleet_request, instance_tags, plan_launch
from controller.cloudprovider.aws.resolver import Subnet
from controller.cloudprovider.base import NodeRequest
from controller.core import labels as L
from controller.core.requirements import Requirements
from controller.scheduling.instancetypes import new_instance_type
from controller.scheduling.types import InstanceType, Offering

SUBNETS = [Subnet("subnet-big", "z1", 200), Subnet("subnet-small", "z1", 10), Subnet("subnet-b", "z2", 50)]


def it(name: str, price: float, gpus: int = 0, size: str = "large") -> InstanceType:
    offers = [
        Offering(z, ct, price * (0.5 if ct == "spot" else 1)) for z in ("z1", "z2") for ct in ("spot", "on-demand")
    ]
    cap = {"cpu": 2000, "memory": 2**33, "pods": 29, **({"nvidia.com/gpu": gpus} if gpus else {})}
    return new_instance_type(name, {L.INSTANCE_TYPE: name, L.INSTANCE_SIZE: size}, cap, {}, offers)


def request(*types: InstanceType, capacity: tuple[str, ...] = ("spot", "on-demand")) -> NodeRequest:
    reqs = Requirements.from_wire([{"key": L.CAPACITY_TYPE, "operator": "In", "values": list(capacity)}])
    return NodeRequest("default", reqs, tuple(types))


def test_spot_cheapest_first_roomiest_subnet_per_zone() -> None:
    plan = plan_launch(request(it("b.large", 0.2), it("a.large", 0.1)), SUBNETS, frozenset())
    assert plan is not None and plan.capacity_type == "spot"
    assert [(t.name, o.zone, s.id) for t, o, s in plan.overrides] == [
        ("a.large", "z1", "subnet-big"),
        ("a.large", "z2", "subnet-b"),
        ("b.large", "z1", "subnet-big"),
        ("b.large", "z2", "subnet-b"),
    ]


def test_metal_and_gpu_types_only_when_nothing_else_fits() -> None:
    plan = plan_launch(
        request(it("g.large", 0.01, gpus=1), it("m.metal", 0.01, size="metal"), it("c.large", 1)), SUBNETS, frozenset()
    )
    assert plan is not None and {t.name for t, _, _ in plan.overrides} == {"c.large"}
    only_gpu = plan_launch(request(it("g.large", 0.01, gpus=1)), SUBNETS, frozenset())
    assert only_gpu is not None and {t.name for t, _, _ in only_gpu.overrides} == {"g.large"}


def test_the_insufficient_capacity_cache_and_on_demand_only() -> None:
    ice = frozenset({("a.large", "z1", "spot"), ("a.large", "z2", "spot")})
    plan = plan_launch(request(it("a.large", 0.1)), SUBNETS, ice)
    assert plan is not None and plan.capacity_type == "on-demand"
    assert plan_launch(request(it("a.large", 0.1), capacity=("spot",)), SUBNETS, ice) is None


def test_fleet_request_and_tags() -> None:
    tags = instance_tags("prod", "default", {"team": "x", "env": "a"}, {"env": "b"})
    assert tags["Name"] == "karpenter.sh/provisioner-name/default" and tags["kubernetes.io/cluster/prod"] == "owned"
    assert tags["karpenter.sh/discovery"] == "prod" and tags["env"] == "b" and tags["team"] == "x"
    assert tags["karpy.sh/managed-by"] == "prod"
    # no user tag can take karpy's ownership tag away (nor forge it for another cluster)
    forged = instance_tags("prod", "default", {"karpy.sh/managed-by": "x"}, {"own": "1"}, ownership_tag="own")
    assert forged["own"] == "prod" and forged["karpy.sh/managed-by"] == "x"
    params = fleet_request("on-demand", {"karpy/1": [{"InstanceType": "a.large"}]}, tags, context="ctx")
    assert params["Type"] == "instant" and params["Context"] == "ctx"
    assert params["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"} and "SpotOptions" not in params
    assert [t["ResourceType"] for t in params["TagSpecifications"]] == ["instance", "volume", "fleet"]
