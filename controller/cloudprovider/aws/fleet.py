"""One launch as a plan and a CreateFleet request (spec §5.9 steps 2–8). Pure.

`plan_launch(request, subnets, unavailable)`: the request's types with an allowed offering not in
the insufficient-capacity cache; the exotic filter (metal and accelerator types only when
nothing else is left); the mixed-capacity filter (with spot and on-demand both on offer, a type
dearer than the cheapest on-demand offering is dropped); spot whenever allowed and offered, else
on-demand; per zone the subnet with the most free IPs; types cheapest first, at most 60, and up
to 60 (type, zone → subnet) overrides. `fleet_request(...)` is the `CreateFleet` parameters
(`instant`, capacity 1, `price-capacity-optimized` for spot, `lowest-price` for on-demand, tags
on instance, volume and fleet); `instance_tags(...)` the tags every instance carries, ending
with karpy's ownership tag (`OWNERSHIP_TAG`, configurable, value the cluster name).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.cloudprovider.aws.instancetypes import GPU_RESOURCES, NEURON
from controller.cloudprovider.aws.resolver import Subnet
from controller.cloudprovider.base import NodeRequest
from controller.core import labels as L
from controller.scheduling.instancetypes import allowed_offerings
from controller.scheduling.types import InstanceType, Offering

log = logging.getLogger(__name__)

MAX_INSTANCE_TYPES = 60
ICE_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "MaxSpotInstanceCountExceeded",
        "VcpuLimitExceeded",
        "UnfulfillableCapacity",
        "Unsupported",
    }
)
DISCOVERY_TAG = "karpenter.sh/discovery"
OWNERSHIP_TAG = "karpy.sh/managed-by"  # the default key of karpy's ownership tag (value: the cluster name)


@dataclass(frozen=True)
class Plan:
    capacity_type: str
    overrides: list[tuple[InstanceType, Offering, Subnet]]


def plan_launch(request: NodeRequest, subnets: Sequence[Subnet], unavailable: frozenset[Any]) -> Plan | None:
    """None when no offering of the request can be tried."""
    options = []
    for it in request.instance_type_options:
        offers = [
            o
            for o in allowed_offerings(it, request.requirements)
            if (it.name, o.zone, o.capacity_type) not in unavailable
        ]
        if offers:
            options.append((it, offers))
    if not options:
        return None
    plain = [(it, offers) for it, offers in options if not _exotic(it)]
    options = _no_dearer_than_on_demand(plain or options)
    spot = any(o.capacity_type == L.CAPACITY_TYPE_SPOT for _, offers in options for o in offers)
    capacity_type = L.CAPACITY_TYPE_SPOT if spot else L.CAPACITY_TYPE_ON_DEMAND
    spot_allowed = request.requirements.get_or_exists(L.CAPACITY_TYPE).has(L.CAPACITY_TYPE_SPOT)
    if not spot and spot_allowed and len(options) < 5:
        log.warning(
            "at least 5 instance types are recommended when flexible to spot but requesting on-demand; "
            "the current provisioning request only has %d instance type options",
            len(options),
        )
    best: dict[str, Subnet] = {}
    for subnet in subnets:  # sorted by free IPs: the first per zone is the roomiest
        best.setdefault(subnet.zone, subnet)
    priced = []
    for it, offers in options:
        mine = sorted(
            (o for o in offers if o.capacity_type == capacity_type and o.zone in best), key=lambda o: (o.price, o.zone)
        )
        if mine:
            priced.append((mine[0].price, it.name, it, mine))
    priced.sort(key=lambda p: (p[0], p[1]))
    if not priced:
        return None
    overrides = [(it, o, best[o.zone]) for _, _, it, offers in priced[:MAX_INSTANCE_TYPES] for o in offers]
    return Plan(capacity_type, overrides[:MAX_INSTANCE_TYPES])


def _no_dearer_than_on_demand(
    options: list[tuple[InstanceType, list[Offering]]],
) -> list[tuple[InstanceType, list[Offering]]]:
    kinds = {o.capacity_type for _, offers in options for o in offers}
    if kinds != {L.CAPACITY_TYPE_SPOT, L.CAPACITY_TYPE_ON_DEMAND}:
        return options
    cheapest_od = min(o.price for _, offers in options for o in offers if o.capacity_type == L.CAPACITY_TYPE_ON_DEMAND)
    return [(it, offers) for it, offers in options if min(o.price for o in offers) <= cheapest_od]


def _exotic(it: InstanceType) -> bool:
    if it.labels.get(L.INSTANCE_SIZE) == "metal":
        return True
    return any(it.capacity.get(r, 0) for r in (*GPU_RESOURCES.values(), NEURON))


def instance_tags(
    cluster: str,
    provisioner: str,
    global_tags: Mapping[str, str],
    template_tags: Mapping[str, str],
    ownership_tag: str = OWNERSHIP_TAG,
) -> dict[str, str]:
    """Karpenter's tags < the global tags < the node template's (later wins) < karpy's ownership
    tag, which no user tag can change: it is how karpy tells its resources from Karpenter's, which
    carry the same Karpenter tags (`kubernetes.io/cluster/<cluster>`, `karpenter.sh/provisioner-name`)."""
    return {
        "Name": f"{L.PROVISIONER_NAME}/{provisioner}",
        f"kubernetes.io/cluster/{cluster}": "owned",
        L.PROVISIONER_NAME: provisioner,
        DISCOVERY_TAG: cluster,
        **global_tags,
        **template_tags,
        ownership_tag: cluster,
    }


def fleet_request(
    capacity_type: str,
    configs: Mapping[str, Sequence[Mapping[str, str]]],
    tags: Mapping[str, str],
    context: str | None = None,
) -> dict[str, Any]:
    """`configs`: launch template name → its overrides, in price order."""
    params: dict[str, Any] = {
        "Type": "instant",
        "TargetCapacitySpecification": {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": capacity_type},
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": name, "Version": "$Latest"},
                "Overrides": [dict(o) for o in overrides],
            }
            for name, overrides in sorted(configs.items())
        ],
        "TagSpecifications": [
            {"ResourceType": kind, "Tags": [{"Key": k, "Value": v} for k, v in sorted(tags.items())]}
            for kind in ("instance", "volume", "fleet")
        ],
    }
    if capacity_type == L.CAPACITY_TYPE_SPOT:
        params["SpotOptions"] = {"AllocationStrategy": "price-capacity-optimized"}
    else:
        params["OnDemandOptions"] = {"AllocationStrategy": "lowest-price"}
    if context:
        params["Context"] = context
    return params
