"""Vectorised instance-type filtering (`controller/scheduling/typetable.py`)."""

from __future__ import annotations

import numpy as np

from controller.core.labels import ARCH, CAPACITY_TYPE, ZONE
from controller.core.requirements import Requirement, Requirements
from controller.scheduling.typetable import TypeTable
from tests.builders.scheduling import make_instance_type, small_catalog


def table() -> TypeTable:
    return TypeTable(small_catalog(), ["cpu", "memory", "pods"])


def names(t: TypeTable, mask: np.ndarray) -> list[str]:
    return [t.types[i].name for i in np.flatnonzero(mask)]


def test_rows_are_sorted_by_name_and_hold_allocatable() -> None:
    t = table()
    assert [it.name for it in t.types] == ["a.xlarge", "g.2xlarge", "m.2xlarge", "m.large", "m.xlarge"]
    assert t.alloc[3].tolist() == [2000, 8 * 2**30, 10]
    assert names(t, t.exotic) == ["g.2xlarge"]


def test_compatible_combines_requirements_and_offerings() -> None:
    t = table()
    arm = Requirements([Requirement.new(ARCH, "In", ["arm64"])])
    assert names(t, t.compatible(arm, frozenset(arm.values()))) == ["a.xlarge"]
    spot = Requirements([Requirement.new(CAPACITY_TYPE, "In", ["spot"])])
    assert names(t, t.compatible(spot, frozenset(spot.values()))) == []
    custom = Requirements([Requirement.new("team", "In", ["a"])])  # keys types do not define are ignored
    assert len(names(t, t.compatible(custom, frozenset(custom.values())))) == 5


def test_fits_and_ordering() -> None:
    t = table()
    assert names(t, t.fits(np.array([3000, 0, 1]))) == ["a.xlarge", "g.2xlarge", "m.2xlarge", "m.xlarge"]
    assert [t.types[i].name for i in t.ordered(t.all, Requirements(), 3)] == ["m.large", "a.xlarge", "m.xlarge"]


def test_launch_prefers_spot_then_price_then_zone_name() -> None:
    types = [make_instance_type("m.large", price=0.10, spot_price=0.04, spot_zones=["test-zone-c", "test-zone-b"])]
    t = TypeTable(types, ["cpu"])
    assert t.launch([0], Requirements()) == (0, "test-zone-b", "spot", 0.04)
    zone_a = Requirements([Requirement.new(ZONE, "In", ["test-zone-a"])])
    assert t.launch([0], zone_a) == (0, "test-zone-a", "on-demand", 0.10)
    assert t.launch([], zone_a) is None
    assert t.prices(zone_a).tolist() == [0.10]
