"""Launch ordering and the insufficient-capacity cache of `controller/cloudprovider/base.py`."""

from __future__ import annotations

import pytest

from controller.clock import FakeClock
from controller.cloudprovider.base import NodeRequest, UnavailableOfferings, terminate_instance, with_unavailable
from controller.cloudprovider.errors import CloudProviderError
from controller.core import labels as L
from controller.core.requirements import IN, Requirement, Requirements
from controller.scheduling.instancetypes import launch_order
from controller.scheduling.types import InstanceType
from tests.builders.scheduling import make_instance_type
from tests.fakes.cloudprovider import FakeCloudProvider

ZONES = ("z1",)


def request(*types: InstanceType, **reqs: list[str]) -> NodeRequest:
    keys = {"capacity_type": L.CAPACITY_TYPE, "zone": L.ZONE}
    return NodeRequest("default", Requirements(Requirement.new(keys[k], IN, v) for k, v in reqs.items()), types)


def names(req: NodeRequest, unavailable: frozenset[tuple[str, str, str]] = frozenset()) -> list[str]:
    order = launch_order(req.instance_type_options, req.requirements, unavailable)
    return [f"{o.instance_type.name}/{o.offering.capacity_type}" for o in order]


def test_spot_before_on_demand_cheapest_first() -> None:
    a = make_instance_type("a", price=1.0, spot_price=0.5, zones=ZONES)
    b = make_instance_type("b", price=0.8, spot_price=0.3, zones=ZONES)
    assert names(request(a, b)) == ["b/spot", "a/spot", "b/on-demand", "a/on-demand"]


def test_requirements_restrict_capacity_type_and_zone() -> None:
    a = make_instance_type("a", price=1.0, spot_price=0.5, zones=("z1", "z2"))
    assert names(request(a, capacity_type=["on-demand"], zone=["z2"])) == ["a/on-demand"]


def test_cached_offerings_are_skipped() -> None:
    a = make_instance_type("a", price=1.0, spot_price=0.5, zones=ZONES)
    b = make_instance_type("b", price=0.8, spot_price=0.3, zones=ZONES)
    assert names(request(a, b), frozenset({("b", "z1", "spot")}))[0] == "a/spot"


def test_cache_expires_after_ttl() -> None:
    clock = FakeClock()
    cache = UnavailableOfferings(clock, ttl=45)
    cache.mark("a", "z1", "spot")
    clock.step(44)
    assert cache.is_unavailable("a", "z1", "spot")
    clock.step(2)
    assert not cache.is_unavailable("a", "z1", "spot")


def test_with_unavailable_marks_offering_and_drops_it_from_requirements() -> None:
    a = make_instance_type("a", price=1.0, spot_price=0.5, zones=ZONES)
    (marked,) = with_unavailable([a], frozenset({("a", "z1", "spot")}))
    assert [o.available for o in marked.offerings] == [True, False]
    assert not marked.requirements[L.CAPACITY_TYPE].has("spot")


def test_terminate_instance_counts_an_instance_already_gone_as_done() -> None:
    cloud = FakeCloudProvider([make_instance_type("a", price=1.0, zones=ZONES)])
    instance = cloud.create(request(*cloud.instance_types))
    assert terminate_instance(cloud, instance.provider_id, "terminating")
    assert instance.provider_id not in cloud.instances
    assert terminate_instance(cloud, instance.provider_id, "terminating again")  # NotFound is success


def test_terminate_instance_reports_another_cloud_error_as_not_done(caplog: pytest.LogCaptureFixture) -> None:
    cloud = FakeCloudProvider([make_instance_type("a", price=1.0, zones=ZONES)])
    instance = cloud.create(request(*cloud.instance_types))
    cloud.delete_error = CloudProviderError("throttled")
    assert not terminate_instance(cloud, instance.provider_id, f"terminating {instance.provider_id}")
    assert instance.provider_id in cloud.instances
    assert f"terminating {instance.provider_id}: throttled" in caplog.text
