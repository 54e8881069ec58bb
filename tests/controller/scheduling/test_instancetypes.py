"""Instance-type requirements and prices (`controller/scheduling/instancetypes.py`, spec §4.4)."""

from __future__ import annotations

from controller.core import labels as L
from controller.core.requirements import Requirement, Requirements
from controller.scheduling.instancetypes import INSTANCE_TYPE_KEYS, allowed_offerings, by_price, cheapest_price
from tests.builders.scheduling import make_instance_type


def test_every_well_known_key_is_defined() -> None:
    it = make_instance_type("m.large", spot_price=0.03, unavailable=[("test-zone-c", "spot")])
    assert set(it.requirements) == set(INSTANCE_TYPE_KEYS)
    assert L.PROVISIONER_NAME not in it.requirements
    assert it.requirements[L.INSTANCE_GPU_COUNT].operator == "DoesNotExist"
    assert it.requirements[L.ZONE].values == {"test-zone-a", "test-zone-b", "test-zone-c"}
    assert it.requirements[L.CAPACITY_TYPE].values == {"spot", "on-demand"}


def test_zones_come_from_available_offerings_only() -> None:
    it = make_instance_type("m.large", unavailable=[("test-zone-c", "on-demand")])
    assert it.requirements[L.ZONE].values == {"test-zone-a", "test-zone-b"}


def test_prices_follow_the_allowed_offerings() -> None:
    it = make_instance_type("m.large", price=0.10, spot_price=0.04, spot_zones=["test-zone-b"])
    on_demand = Requirements([Requirement.new(L.CAPACITY_TYPE, "In", ["on-demand"])])
    zone_a = Requirements([Requirement.new(L.ZONE, "In", ["test-zone-a"])])
    assert cheapest_price(it, Requirements()) == 0.04
    assert cheapest_price(it, on_demand) == 0.10
    assert cheapest_price(it, zone_a) == 0.10
    assert [o.capacity_type for o in allowed_offerings(it, zone_a)] == ["on-demand"]
    nowhere = Requirements([Requirement.new(L.ZONE, "In", ["mars"])])
    assert cheapest_price(it, nowhere) == float("inf")


def test_by_price_breaks_ties_by_name() -> None:
    types = [make_instance_type("b.large", price=0.1), make_instance_type("a.large", price=0.1),
             make_instance_type("c.large", price=0.05)]  # fmt: skip
    assert [it.name for it in by_price(types, Requirements())] == ["c.large", "a.large", "b.large"]
