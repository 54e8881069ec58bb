"""`FakeTransport`: the AWS adapter seam (`controller.cloudprovider.aws.api.Transport`) in memory.

For what moto cannot do: prices (`get_products` documents, spot history), insufficient capacity,
which override CreateFleet picks, the EKS SSM parameters. Knobs: `errors[operation]` (a queue of
`ApiError`s raised by the next calls), `out_of_capacity` ({(type, zone, capacity type)}: fleet
overrides that answer InsufficientInstanceCapacity), `fleet_capacity` (at most this many instances
per CreateFleet: partial fulfilment), `fleet_surplus` (more than asked), `products`,
`spot_history`, `parameters`. Records every call in `calls`. CreateFleet launches its
`TotalTargetCapacity` on the first override (in request order) that is not out of capacity, as
EC2's lowest-price strategy would with ordered overrides; DescribeInstances and
TerminateInstances fail the whole call for one unknown ID, as EC2 does.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from controller.cloudprovider.aws.api import ApiError


def info(name: str, vcpus: int, mib: int, arch: str = "x86_64", enis: int = 3, ipv4: int = 10) -> dict[str, Any]:
    return {
        "InstanceType": name,
        "SupportedUsageClasses": ["on-demand", "spot"],
        "SupportedVirtualizationTypes": ["hvm"],
        "Hypervisor": "nitro",
        "ProcessorInfo": {"SupportedArchitectures": [arch]},
        "VCpuInfo": {"DefaultVCpus": vcpus},
        "MemoryInfo": {"SizeInMiB": mib},
        "NetworkInfo": {
            "MaximumNetworkInterfaces": enis,
            "Ipv4AddressesPerInterface": ipv4,
            "DefaultNetworkCardIndex": 0,
            "NetworkCards": [
                {"NetworkCardIndex": 0, "MaximumNetworkInterfaces": enis, "BaselineBandwidthInGbps": 0.75}
            ],
        },
    }


def product(name: str, usd: str) -> str:
    import json

    return json.dumps(
        {
            "product": {"attributes": {"instanceType": name}},
            "terms": {"OnDemand": {"x": {"priceDimensions": {"y": {"pricePerUnit": {"USD": usd}, "unit": "Hrs"}}}}},
        }
    )


class FakeTransport:
    def __init__(self, zones: tuple[str, ...] = ("us-east-1a", "us-east-1b")) -> None:
        self.zones = zones
        self.instance_types = [
            info("m5.large", 2, 8192),
            info("c5.large", 2, 4096),
            info("m5.xlarge", 4, 16384, enis=4, ipv4=15),
        ]
        self.products: list[str] = []
        self.spot_history: list[dict[str, Any]] = []
        self.parameters: dict[str, str] = {}
        self.out_of_capacity: set[tuple[str, str, str]] = set()
        self.errors: dict[str, list[ApiError]] = {}
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.instances: dict[str, dict[str, Any]] = {}
        self.launch_templates: dict[str, dict[str, Any]] = {}
        self.fleet_capacity: int | None = None  # at most this many instances per CreateFleet (partial fulfilment)
        self.fleet_surplus = 0  # instances a CreateFleet launches beyond what it was asked for
        self._ids = itertools.count(1)

    def named(self, operation: str) -> list[dict[str, Any]]:
        return [p for _, op, p in self.calls if op == operation]

    def call(self, service: str, operation: str, params: Mapping[str, Any]) -> dict[str, Any]:
        self.calls.append((service, operation, dict(params)))
        queued = self.errors.get(operation)
        if queued:
            raise queued.pop(0)
        handler = getattr(self, f"_{operation}", None)
        if handler is None:
            raise ApiError("UnsupportedOperation", f"the fake does not serve {operation}")
        result: dict[str, Any] = handler(params)
        return result

    def _describe_instance_types(self, _: Mapping[str, Any]) -> dict[str, Any]:
        return {"InstanceTypes": self.instance_types}

    def _describe_instance_type_offerings(self, _: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "InstanceTypeOfferings": [
                {"InstanceType": i["InstanceType"], "Location": z} for i in self.instance_types for z in self.zones
            ]
        }

    def _describe_subnets(self, _: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "Subnets": [
                {"SubnetId": f"subnet-{z[-1]}", "AvailabilityZone": z, "AvailableIpAddressCount": 100}
                for z in self.zones
            ]
        }

    def _describe_security_groups(self, _: Mapping[str, Any]) -> dict[str, Any]:
        return {"SecurityGroups": [{"GroupId": "sg-1"}]}

    def _describe_images(self, _: Mapping[str, Any]) -> dict[str, Any]:
        return {"Images": [{"ImageId": "ami-1", "Architecture": "x86_64", "CreationDate": "2024-01-01"}]}

    def _get_parameter(self, params: Mapping[str, Any]) -> dict[str, Any]:
        if params["Name"] not in self.parameters:
            raise ApiError("ParameterNotFound", params["Name"])
        return {"Parameter": {"Name": params["Name"], "Value": self.parameters[params["Name"]]}}

    def _describe_launch_templates(self, params: Mapping[str, Any]) -> dict[str, Any]:
        names = params.get("LaunchTemplateNames")
        if names:
            missing = [n for n in names if n not in self.launch_templates]
            if missing:
                raise ApiError("InvalidLaunchTemplateName.NotFoundException", f"{missing[0]} not found")
            return {"LaunchTemplates": [self.launch_templates[n] for n in names]}
        return {"LaunchTemplates": list(self.launch_templates.values())}

    def _create_launch_template(self, params: Mapping[str, Any]) -> dict[str, Any]:
        lt = {"LaunchTemplateName": params["LaunchTemplateName"], "Data": params["LaunchTemplateData"]}
        self.launch_templates[params["LaunchTemplateName"]] = lt
        return {"LaunchTemplate": lt}

    def _delete_launch_template(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self.launch_templates.pop(params["LaunchTemplateName"], None)
        return {}

    def _create_fleet(self, params: Mapping[str, Any]) -> dict[str, Any]:
        capacity_type = params["TargetCapacitySpecification"]["DefaultTargetCapacityType"]
        wanted = int(params["TargetCapacitySpecification"]["TotalTargetCapacity"])
        if self.fleet_capacity is not None:
            wanted = min(wanted, self.fleet_capacity)
        wanted += self.fleet_surplus
        errors = []
        for config in params["LaunchTemplateConfigs"]:
            for o in config["Overrides"]:
                if (o["InstanceType"], o["AvailabilityZone"], capacity_type) in self.out_of_capacity:
                    errors.append(
                        {
                            "ErrorCode": "InsufficientInstanceCapacity",
                            "ErrorMessage": "no capacity",
                            "Lifecycle": capacity_type,
                            "LaunchTemplateAndOverrides": {"Overrides": dict(o)},
                        }
                    )
                    continue
                ids = [self._launch(o, capacity_type, params) for _ in range(wanted)]
                launched = [{"InstanceIds": ids, "Lifecycle": capacity_type}] if ids else []
                return {"Instances": launched, "Errors": errors}
        return {"Instances": [], "Errors": errors}

    def _launch(self, override: Mapping[str, Any], capacity_type: str, params: Mapping[str, Any]) -> str:
        instance_id = f"i-{next(self._ids):017x}"
        self.instances[instance_id] = {
            "InstanceId": instance_id,
            "InstanceType": override["InstanceType"],
            "Placement": {"AvailabilityZone": override["AvailabilityZone"]},
            "PrivateDnsName": f"ip-10-0-0-{len(self.instances) + 1}.ec2.internal",
            "State": {"Name": "running"},
            "LaunchTime": datetime(2024, 1, 1, tzinfo=UTC),
            **({"InstanceLifecycle": "spot"} if capacity_type == "spot" else {}),
            "Tags": [
                t for spec in params["TagSpecifications"] if spec["ResourceType"] == "instance" for t in spec["Tags"]
            ],
        }
        return instance_id

    def _describe_instances(self, params: Mapping[str, Any]) -> dict[str, Any]:
        ids = params.get("InstanceIds")
        unknown = [i for i in ids or () if i not in self.instances]
        if unknown:  # as EC2: one unknown ID fails the whole call
            raise ApiError("InvalidInstanceID.NotFound", f"The instance ID '{unknown[0]}' does not exist")
        found = [self.instances[i] for i in ids] if ids else list(self.instances.values())
        return {"Reservations": [{"Instances": found}]} if found else {"Reservations": []}

    def _terminate_instances(self, params: Mapping[str, Any]) -> dict[str, Any]:
        ids = params["InstanceIds"]
        unknown = [i for i in ids if i not in self.instances]
        if unknown:
            raise ApiError("InvalidInstanceID.NotFound", f"The instance ID '{unknown[0]}' does not exist")
        changes = []
        for i in ids:
            before = self.instances[i]["State"]["Name"]
            self.instances[i]["State"] = {"Name": "shutting-down" if before != "terminated" else "terminated"}
            changes.append(
                {"InstanceId": i, "PreviousState": {"Name": before}, "CurrentState": self.instances[i]["State"]}
            )
        return {"TerminatingInstances": changes}

    def live(self) -> list[str]:
        """The IDs of instances neither shutting down nor terminated."""
        return sorted(i for i, inst in self.instances.items() if inst["State"]["Name"] == "running")

    def _describe_spot_price_history(self, _: Mapping[str, Any]) -> dict[str, Any]:
        return {"SpotPriceHistory": self.spot_history}

    def _get_products(self, _: Mapping[str, Any]) -> dict[str, Any]:
        return {"PriceList": self.products}
