"""Building `InstanceType`s from labels, capacity and offerings; prices per requirement.

Pure. `new_instance_type()` is what every cloud provider (simulated catalog, a JSON catalog,
AWS) calls: it derives the requirement set of spec §4.4 — every well-known key, `DoesNotExist`
where the type has no label, zone and capacity type from the *available* offerings — and
applies nothing else. `cheapest_price()` is the price ordering of spec §5.9 (cheapest available
offering allowed by the node's zone and capacity-type requirements).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from controller.core.labels import CAPACITY_TYPE, PROVISIONER_NAME, WELL_KNOWN_LABELS, ZONE
from controller.core.requirements import Requirement, Requirements
from controller.scheduling.types import InstanceType, Offering

# Keys an instance type defines (provisioner-name belongs to the provisioner, not the type).
INSTANCE_TYPE_KEYS = tuple(sorted(WELL_KNOWN_LABELS - {PROVISIONER_NAME}))


def instance_type_requirements(labels: Mapping[str, str], offerings: Iterable[Offering]) -> Requirements:
    available = [o for o in offerings if o.available]
    reqs = Requirements()
    for key in INSTANCE_TYPE_KEYS:
        if key == ZONE:
            reqs.add(Requirement(key, False, frozenset(o.zone for o in available)))
        elif key == CAPACITY_TYPE:
            reqs.add(Requirement(key, False, frozenset(o.capacity_type for o in available)))
        elif key in labels:
            reqs.add(Requirement(key, False, frozenset({labels[key]})))
        else:
            reqs.add(Requirement(key, False))
    return reqs


def new_instance_type(
    name: str,
    labels: Mapping[str, str],
    capacity: Mapping[str, int],
    overhead: Mapping[str, int],
    offerings: Iterable[Offering],
) -> InstanceType:
    offers = tuple(offerings)
    return InstanceType(
        name=name,
        requirements=instance_type_requirements(labels, offers),
        capacity=dict(capacity),
        overhead=dict(overhead),
        offerings=offers,
    )


def allowed_offerings(it: InstanceType, requirements: Requirements) -> list[Offering]:
    """Available offerings whose zone and capacity type the requirements allow."""
    zones = requirements.get_or_exists(ZONE)
    capacity_types = requirements.get_or_exists(CAPACITY_TYPE)
    return [o for o in it.offerings if o.available and zones.has(o.zone) and capacity_types.has(o.capacity_type)]


def cheapest_price(it: InstanceType, requirements: Requirements) -> float:
    """The price of the cheapest allowed offering (infinity when there is none)."""
    return min((o.price for o in allowed_offerings(it, requirements)), default=float("inf"))


def by_price(types: Iterable[InstanceType], requirements: Requirements) -> list[InstanceType]:
    """Cheapest allowed offering first, ties by name; types without one last."""
    return sorted(types, key=lambda it: (cheapest_price(it, requirements), it.name))
