"""Building `InstanceType`s from labels, capacity and offerings; prices per requirement.

Pure. `new_instance_type()` is what every cloud provider (simulated catalog, a JSON catalog,
AWS) calls: it derives the requirement set of spec §4.4 — every well-known key, `DoesNotExist`
where the type has no label, zone and capacity type from the *available* offerings — and
applies nothing else. `allowed_offerings()` is the one rule for which offerings a node's zone and
capacity-type requirements allow; `cheapest_price()` is the price ordering of spec §5.9.
`launch_order()` is the one decision of which (type, offering) a new node launches as, used by
the scheduler's simulated `Launch` (what `karpy simulate` shows) and by every cloud provider's
`create()` (what the controller launches): metal and accelerator types only when nothing else
in the options can be launched, spot before on-demand, then the cheapest (spec §5.9).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from controller.core.labels import (
    CAPACITY_TYPE,
    CAPACITY_TYPE_SPOT,
    INSTANCE_SIZE,
    PROVISIONER_NAME,
    WELL_KNOWN_LABELS,
    ZONE,
)
from controller.core.requirements import Requirement, Requirements
from controller.scheduling.types import InstanceType, Offering

# Keys an instance type defines (provisioner-name belongs to the provisioner, not the type).
INSTANCE_TYPE_KEYS = tuple(sorted(WELL_KNOWN_LABELS - {PROVISIONER_NAME}))

# Accelerator resources that make an instance type "exotic" (launched only when nothing else fits).
EXOTIC_RESOURCES = ("aws.amazon.com/neuron", "amd.com/gpu", "nvidia.com/gpu", "habana.ai/gaudi")

OfferingKey = tuple[str, str, str]  # (instance type, zone, capacity type)


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


def is_exotic(it: InstanceType) -> bool:
    """Metal sizes and accelerators: launched only when nothing else fits (spec §5.9)."""
    size = it.requirements.get(INSTANCE_SIZE)
    return (size is not None and size.has("metal")) or any(it.capacity.get(r, 0) for r in EXOTIC_RESOURCES)


@dataclass(frozen=True)
class LaunchOption:
    instance_type: InstanceType
    offering: Offering


def launch_order(
    types: Sequence[InstanceType], requirements: Requirements, unavailable: frozenset[OfferingKey] = frozenset()
) -> list[LaunchOption]:
    """Every (type, offering) a launch of `types` under `requirements` may take, in the order it
    tries them (pure). Offerings not allowed, not available or in `unavailable` (the cloud's
    insufficient-capacity cache) are left out; exotic types are left out when any other type
    remains. Spot before on-demand, then price, then type name, then zone (karpy's stable
    tie-break).
    """
    options = [
        LaunchOption(it, offering)
        for it in types
        for offering in allowed_offerings(it, requirements)
        if (it.name, offering.zone, offering.capacity_type) not in unavailable
    ]
    if any(not is_exotic(o.instance_type) for o in options):
        options = [o for o in options if not is_exotic(o.instance_type)]
    options.sort(
        key=lambda o: (
            o.offering.capacity_type != CAPACITY_TYPE_SPOT,
            o.offering.price,
            o.instance_type.name,
            o.offering.zone,
        )
    )
    return options
