"""AWSNodeTemplate → the EC2 resources it selects: subnets, security groups, AMIs (spec §1.3, §5.9).

Selectors: key `aws-ids` → the comma-separated IDs; value `*` → "tag key exists"; otherwise
`tag:<key>` with comma-separated values. Subnets come sorted by free IPv4 addresses (most
first); AMIs come from `amiSelector` (`DescribeImages`, owners `self`,`amazon` unless ids or
owners are given) or, without one, from the public SSM parameters of the AMI family for the
cluster's Kubernetes version, newest first, one per (architecture, GPU) variant. Answers are
cached for `ttl` seconds per selector. Errors: `AWSError` (the call failed) or
`ResolutionError` (nothing matched; the message names the selector).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.clock import Clock
from controller.cloudprovider.aws.amifamily import CUSTOM, family_of, ssm_parameters
from controller.cloudprovider.aws.api import AWSApi
from controller.cloudprovider.aws.instancetypes import ARCHITECTURES
from controller.cloudprovider.errors import CloudProviderError
from controller.core import labels as L
from controller.core.labels import WELL_KNOWN_LABELS

CACHE_SECONDS = 60.0


class ResolutionError(CloudProviderError):
    """A node template selects nothing (no subnet, no security group, no AMI)."""


@dataclass(frozen=True)
class Subnet:
    id: str
    zone: str
    free_ips: int


@dataclass(frozen=True)
class Ami:
    id: str
    arch: str  # amd64 | arm64
    gpu: bool | None  # None: fits GPU and non-GPU types
    created: str = ""
    name: str = ""
    # tags on well-known label keys (e.g. node.kubernetes.io/instance-type): the types it fits
    labels: tuple[tuple[str, str], ...] = ()


def selector_filters(selector: Mapping[str, str], id_filter: str) -> list[dict[str, Any]]:
    filters = []
    for key, value in sorted(selector.items()):
        if key in ("aws-ids", "aws::ids"):
            filters.append({"Name": id_filter, "Values": [v.strip() for v in value.split(",") if v.strip()]})
        elif value == "*":
            filters.append({"Name": "tag-key", "Values": [key]})
        else:
            filters.append({"Name": f"tag:{key}", "Values": [v.strip() for v in value.split(",")]})
    return filters


class Resolver:
    def __init__(self, api: AWSApi, clock: Clock, kubernetes_version: str, ttl: float = CACHE_SECONDS) -> None:
        self._api = api
        self._clock = clock
        self._version = kubernetes_version
        self._ttl = ttl
        self._cache: dict[str, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def _cached(self, key: str, load: Any) -> Any:
        now = self._clock.now()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and now - hit[0] < self._ttl:
                return hit[1]
        value = load()
        with self._lock:
            self._cache[key] = (now, value)
        return value

    @property
    def kubernetes_version(self) -> str:
        return self._version

    @kubernetes_version.setter
    def kubernetes_version(self, version: str) -> None:
        """The SSM parameters follow the cluster's version (cached per version)."""
        self._version = version

    def invalidate(self) -> None:
        with self._lock:
            self._cache.clear()

    def subnets(self, template: AWSNodeTemplate) -> list[Subnet]:
        selector = template.subnet_selector
        key = "subnets:" + json.dumps(selector, sort_keys=True)

        def load() -> list[Subnet]:
            found = self._api.pages(
                "ec2",
                "describe_subnets",
                "Subnets",
                f"subnetSelector {selector}",
                Filters=selector_filters(selector, "subnet-id"),
            )
            out = [
                Subnet(s["SubnetId"], s["AvailabilityZone"], int(s.get("AvailableIpAddressCount") or 0)) for s in found
            ]
            return sorted(out, key=lambda s: (-s.free_ips, s.id))

        subnets: list[Subnet] = self._cached(key, load)
        if not subnets:
            raise ResolutionError(f"no subnets matched selector {selector} (AWSNodeTemplate {template.name})")
        return subnets

    def security_groups(self, template: AWSNodeTemplate) -> list[str]:
        selector = template.security_group_selector
        key = "sgs:" + json.dumps(selector, sort_keys=True)

        def load() -> list[str]:
            found = self._api.pages(
                "ec2",
                "describe_security_groups",
                "SecurityGroups",
                f"securityGroupSelector {selector}",
                Filters=selector_filters(selector, "group-id"),
            )
            return sorted(g["GroupId"] for g in found)

        groups: list[str] = self._cached(key, load) if selector else []
        if not groups:
            raise ResolutionError(
                f"no security groups exist given constraints: securityGroupSelector {selector} "
                f"(AWSNodeTemplate {template.name})"
            )
        return groups

    def amis(self, template: AWSNodeTemplate) -> list[Ami]:
        """Newest first; at least one (ResolutionError otherwise)."""
        if template.ami_selector:
            key = "amis:" + json.dumps(template.ami_selector, sort_keys=True)
            amis: list[Ami] = self._cached(key, lambda: self._images(template.ami_selector))
            what = f"amiSelector {template.ami_selector}"
        elif template.ami_family == CUSTOM:
            raise ResolutionError(f"AWSNodeTemplate {template.name}: amiFamily Custom needs an amiSelector")
        else:
            key = f"ssm:{template.ami_family}:{self._version}"
            amis = self._cached(key, lambda: self._ssm(template))
            what = f"the {template.ami_family} SSM parameters for Kubernetes {self._version}"
        if not amis:
            raise ResolutionError(f"no amis exist given constraints: {what} (AWSNodeTemplate {template.name})")
        return amis

    def _images(self, selector: Mapping[str, str]) -> list[Ami]:
        params: dict[str, Any] = {}
        filters = []
        for key, value in sorted(selector.items()):
            values = [v.strip() for v in value.split(",") if v.strip()]
            if key in ("aws-ids", "aws::ids"):
                params["ImageIds"] = values
            elif key == "aws::owners":
                params["Owners"] = values
            elif key == "aws::name":
                filters.append({"Name": "name", "Values": values})
            else:
                filters.append({"Name": f"tag:{key}", "Values": values})
        if "ImageIds" not in params and "Owners" not in params:
            params["Owners"] = ["self", "amazon"]
        if filters:
            params["Filters"] = filters
        images = self._api.call("ec2", "describe_images", f"amiSelector {dict(selector)}", **params).get("Images") or []
        out = []
        for i in images:
            if i.get("Architecture") not in ARCHITECTURES:
                continue
            tags = {t["Key"]: t["Value"] for t in i.get("Tags") or ()}
            labels = tuple(sorted((k, v) for k, v in tags.items() if k in WELL_KNOWN_LABELS))
            arch = ARCHITECTURES[i["Architecture"]]
            out.append(Ami(i["ImageId"], arch, None, str(i.get("CreationDate", "")), str(i.get("Name", "")), labels))
        out.sort(key=lambda a: (a.created, a.name), reverse=True)
        newest: dict[tuple[str, tuple[tuple[str, str], ...]], Ami] = {}
        for ami in out:  # the newest image per distinct requirement set
            newest.setdefault((ami.arch, ami.labels), ami)
        return [a for a in out if newest[(a.arch, a.labels)] is a]

    def _ssm(self, template: AWSNodeTemplate) -> list[Ami]:
        family = family_of(template).name
        out = []
        for arch in ("amd64", "arm64"):
            for gpu in (False, True):
                for name in ssm_parameters(family, self._version, arch, gpu):
                    try:
                        value = self._api.call("ssm", "get_parameter", name, Name=name)["Parameter"]["Value"]
                    except CloudProviderError as err:
                        if "ParameterNotFound" in str(err):
                            continue
                        raise
                    out.append(Ami(str(value), arch, gpu, name=name))
        return out


def ami_for(amis: list[Ami], labels: Mapping[str, str], gpu: bool) -> Ami | None:
    """The first (newest) AMI that fits a type with these labels (architecture, the AMI's
    well-known-label tags) and GPUs or not."""
    arch = labels.get(L.ARCH, "amd64")
    for ami in amis:
        if ami.arch != arch or (ami.gpu is not None and ami.gpu != gpu):
            continue
        if all(labels.get(k) == v for k, v in ami.labels):
            return ami
    return None
