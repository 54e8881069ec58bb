"""The AWSNodeTemplate (`karpenter.k8s.aws/v1alpha1`): typed object and validation (spec §1.3, §3.3).

Pure. The AWS provider struct rules are shared by AWSNodeTemplate and a Provisioner's inline
`spec.provider`. karpy decisions: ID patterns (subnet, security group, AMI) are anchored;
errors on an AWSNodeTemplate are reported at the real path (`spec.subnetSelector`), not with
Karpenter's stray `provider.` segment.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from marshmallow import ValidationError

from controller.apis.errors import FieldError, got_both, invalid_value, missing_field, out_of_bounds
from controller.apis.metadata import validate_metadata
from controller.apis.schemas import AWS_PROVIDER_STRICT, schema_errors
from controller.core.quantity import parse_quantity

API_VERSION = "karpenter.k8s.aws/v1alpha1"
KIND = "AWSNodeTemplate"

AMI_FAMILIES = ("AL2", "Bottlerocket", "Ubuntu", "Custom")
VOLUME_TYPES = ("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3")
_SUBNET_ID = re.compile(r"subnet-[0-9a-z]+")
_SG_ID = re.compile(r"sg-[0-9a-z]+")
_AMI_ID = re.compile(r"ami-[0-9a-z]+")
_MIN_VOLUME = Decimal(10**9)
_MAX_VOLUME = Decimal(64 * 10**12)


@dataclass(frozen=True)
class AWSNodeTemplate:
    name: str
    subnet_selector: dict[str, str] = field(default_factory=dict)
    security_group_selector: dict[str, str] = field(default_factory=dict)
    ami_family: str = "AL2"
    ami_selector: dict[str, str] = field(default_factory=dict)
    instance_profile: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    launch_template: str | None = None
    user_data: str | None = None
    metadata_options: dict[str, Any] | None = None
    block_device_mappings: tuple[dict[str, Any], ...] = ()
    context: str | None = None
    detailed_monitoring: bool = False
    status_subnets: tuple[dict[str, str], ...] = ()
    status_security_groups: tuple[dict[str, str], ...] = ()

    @staticmethod
    def from_wire(obj: Mapping[str, Any]) -> AWSNodeTemplate:
        spec = obj.get("spec") or {}
        return AWSNodeTemplate(
            name=str((obj.get("metadata") or {}).get("name") or ""),
            subnet_selector=dict(spec.get("subnetSelector") or {}),
            security_group_selector=dict(spec.get("securityGroupSelector") or {}),
            ami_family=spec.get("amiFamily") or "AL2",
            ami_selector=dict(spec.get("amiSelector") or {}),
            instance_profile=spec.get("instanceProfile"),
            tags=dict(spec.get("tags") or {}),
            launch_template=spec.get("launchTemplate"),
            user_data=spec.get("userData"),
            metadata_options=spec.get("metadataOptions"),
            block_device_mappings=tuple(spec.get("blockDeviceMappings") or ()),
            context=spec.get("context"),
            detailed_monitoring=bool(spec.get("detailedMonitoring", False)),
            status_subnets=tuple(dict(x) for x in (obj.get("status") or {}).get("subnets") or ()),
            status_security_groups=tuple(dict(x) for x in (obj.get("status") or {}).get("securityGroups") or ()),
        )

    def to_wire(self) -> dict[str, Any]:
        """The document in its wire format (what `from_wire` reads back)."""
        spec: dict[str, Any] = {
            "subnetSelector": self.subnet_selector,
            "securityGroupSelector": self.security_group_selector or None,
            "amiFamily": self.ami_family,
            "amiSelector": self.ami_selector or None,
            "instanceProfile": self.instance_profile,
            "tags": self.tags or None,
            "launchTemplate": self.launch_template,
            "userData": self.user_data,
            "metadataOptions": self.metadata_options,
            "blockDeviceMappings": list(self.block_device_mappings) or None,
            "context": self.context,
            "detailedMonitoring": self.detailed_monitoring or None,
        }
        doc: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": self.name},
            "spec": {k: v for k, v in spec.items() if v is not None},
        }
        status = {"subnets": list(self.status_subnets), "securityGroups": list(self.status_security_groups)}
        status = {k: v for k, v in status.items() if v}
        if status:
            doc["status"] = status
        return doc


def _selector_errors(selector: dict[str, str], path: str, id_pattern: re.Pattern[str], what: str) -> list[FieldError]:
    errors = []
    for key, value in selector.items():
        if key == "" or value == "":
            errors.append(invalid_value('""', f"{path}['{key}']"))
        elif key == "aws-ids":
            for item in value.split(","):
                if not id_pattern.fullmatch(item.strip()):
                    errors.append(
                        invalid_value(item, f"{path}['{key}']", f"must be a valid {what} (regex: {id_pattern.pattern})")
                    )
    return errors


def _enum_error(value: object, allowed: tuple[str, ...], path: str) -> list[FieldError]:
    if value is None or value in allowed:
        return []
    return [FieldError(f"{value} not in {', '.join(allowed)}", (path,))]


def validate_aws_provider(spec: dict[str, Any], base: str, inline: bool = False) -> list[FieldError]:
    """The AWS provider struct rules (spec §3.3 rules 1–7) at paths under `base`."""
    if inline:
        try:
            AWS_PROVIDER_STRICT.load(spec)
        except ValidationError as err:
            return schema_errors(err.messages, base)
    errors: list[FieldError] = []
    launch_template = spec.get("launchTemplate")
    if launch_template:
        for other in ("securityGroupSelector", "metadataOptions", "amiFamily", "instanceProfile"):
            if spec.get(other) is not None:
                errors.append(got_both(f"{base}.launchTemplate", f"{base}.{other}"))
        if spec.get("blockDeviceMappings"):
            errors.append(got_both(f"{base}.launchTemplate", f"{base}.blockDeviceMappings"))
    if spec.get("subnetSelector") is None:
        errors.append(missing_field(f"{base}.subnetSelector"))
    else:
        errors += _selector_errors(spec["subnetSelector"], f"{base}.subnetSelector", _SUBNET_ID, "subnet-id")
    if not launch_template:
        if spec.get("securityGroupSelector") is None:
            errors.append(missing_field(f"{base}.securityGroupSelector"))
        else:
            errors += _selector_errors(
                spec["securityGroupSelector"], f"{base}.securityGroupSelector", _SG_ID, "security-group-id"
            )
    for key, value in (spec.get("tags") or {}).items():
        if key == "":
            errors.append(
                invalid_value(
                    f"the tag with key : '' and value : '{value}' is invalid because empty tag keys aren't supported",
                    f"{base}.tags",
                )
            )
    options = spec.get("metadataOptions")
    if options is not None:
        mpath = f"{base}.metadataOptions"
        errors += _enum_error(options.get("httpEndpoint"), ("enabled", "disabled"), f"{mpath}.httpEndpoint")
        errors += _enum_error(options.get("httpProtocolIPv6"), ("enabled", "disabled"), f"{mpath}.httpProtocolIPv6")
        errors += _enum_error(options.get("httpTokens"), ("required", "optional"), f"{mpath}.httpTokens")
        hops = options.get("httpPutResponseHopLimit")
        if hops is not None and not 1 <= hops <= 64:
            errors.append(out_of_bounds(1, hops, 64, f"{mpath}.httpPutResponseHopLimit"))
    errors += _enum_error(spec.get("amiFamily"), AMI_FAMILIES, f"{base}.amiFamily")
    for i, mapping in enumerate(spec.get("blockDeviceMappings") or []):
        errors += _block_device_errors(mapping, f"{base}.blockDeviceMappings[{i}]")
    return errors


def _block_device_errors(mapping: dict[str, Any], path: str) -> list[FieldError]:
    errors = []
    if not mapping.get("deviceName"):
        errors.append(missing_field(f"{path}.deviceName"))
    ebs = mapping.get("ebs")
    if ebs is None:
        errors.append(missing_field(f"{path}.ebs"))
        return errors
    errors += _enum_error(ebs.get("volumeType"), VOLUME_TYPES, f"{path}.ebs.volumeType")
    size = ebs.get("volumeSize")
    if size is None:
        if not ebs.get("snapshotID"):
            errors.append(missing_field(f"{path}.ebs.volumeSize"))
    elif not _MIN_VOLUME <= parse_quantity(size) <= _MAX_VOLUME:
        errors.append(FieldError(f"expected 1G <= {size} <= 64T", (f"{path}.ebs.volumeSize",)))
    return errors


def validate_awsnodetemplate(obj: dict[str, Any]) -> list[FieldError]:
    """Every rule of spec §3.3 over a schema-checked AWSNodeTemplate document."""
    spec: dict[str, Any] = obj.get("spec") or {}
    errors = validate_metadata(obj.get("metadata") or {})
    errors += validate_aws_provider(spec, "spec")
    launch_template = spec.get("launchTemplate")
    if launch_template and spec.get("userData") is not None:
        errors.append(got_both("spec.launchTemplate", "spec.userData"))
    if launch_template and spec.get("amiSelector") is not None:
        errors.append(got_both("spec.launchTemplate", "spec.amiSelector"))
    if spec.get("amiSelector") is not None:
        errors += _selector_errors(spec["amiSelector"], "spec.amiSelector", _AMI_ID, "ami-id")
    if spec.get("amiFamily") == "Custom" and spec.get("amiSelector") is None:
        errors.append(missing_field("spec.amiSelector"))
    return errors


class NodeTemplateNotFoundError(Exception):
    """A Provisioner's providerRef (or the provider's default) names no AWSNodeTemplate."""

    def __init__(self, provisioner: str, name: str) -> None:
        super().__init__(f"provisioner {provisioner} references AWSNodeTemplate {name!r}, which does not exist")
        self.provisioner = provisioner
        self.name = name


def resolve_node_template(
    provisioner: str,
    provider_ref: str | None,
    inline_provider: Mapping[str, Any] | None,
    templates: Mapping[str, Mapping[str, Any]],
    default_name: str | None = None,
) -> AWSNodeTemplate | None:
    """The AWSNodeTemplate a Provisioner uses (pure; spec §5.9 step 1, decisions table).

    `providerRef.name` → that template; an inline `spec.provider` → a template made of it;
    neither → the provider's default template name (`default` for AWS) or None when the provider
    needs none (simulated). Raises NodeTemplateNotFoundError naming the missing template.
    """
    if provider_ref:
        obj = templates.get(provider_ref)
        if obj is None:
            raise NodeTemplateNotFoundError(provisioner, provider_ref)
        return AWSNodeTemplate.from_wire(obj)
    if inline_provider is not None:
        return AWSNodeTemplate.from_wire({"metadata": {"name": f"{provisioner}-inline"}, "spec": inline_provider})
    if default_name:
        obj = templates.get(default_name)
        if obj is None:
            raise NodeTemplateNotFoundError(provisioner, default_name)
        return AWSNodeTemplate.from_wire(obj)
    return None
