"""marshmallow schemas for the wire format of Provisioner and AWSNodeTemplate.

Pure. Loading checks the shape and types of a document (a string where a string belongs, an
integer where an integer belongs, a quantity where a quantity belongs) and keeps unknown fields
out of the typed result; `schema_errors()` turns marshmallow's nested error dict into field
paths such as `spec.requirements[2].operator`. The semantic rules live in `validation.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marshmallow import EXCLUDE, Schema, ValidationError, fields

from controller.apis.errors import FieldError
from controller.core.quantity import QuantityError, parse_duration, parse_quantity


class StrictString(fields.String):
    """A string that is really a string (marshmallow would not coerce, but be explicit)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if not isinstance(value, str):
            raise ValidationError("must be a string")
        return value


class StrictInteger(fields.Integer):
    """An integer that is really an integer (not `true`, not `"5"`, not `1.5`)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(strict=True, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError("must be an integer")
        if not -(2**63) <= value < 2**63:
            raise ValidationError("must fit in a 64-bit integer")
        return value


class StrictBoolean(fields.Boolean):
    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if not isinstance(value, bool):
            raise ValidationError("must be a boolean")
        return value


class QuantityField(fields.Field):  # type: ignore[type-arg]
    """A Kubernetes quantity, int-or-string on the wire; loaded as its canonical text."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValidationError("must be a quantity (a string such as 100m or 1Gi, or a number)")
        try:
            parse_quantity(value)
        except QuantityError as err:
            raise ValidationError(str(err)) from err
        return value if isinstance(value, str) else str(value)

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> Any:
        return value


class DurationOrSeconds(fields.Field):  # type: ignore[type-arg]
    """An integer number of seconds or a Go duration string (`3m`), as seed 004 writes it."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if isinstance(value, bool):
            raise ValidationError("must be a number of seconds or a duration such as 3m")
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            try:
                parse_duration(value)
            except QuantityError as err:
                raise ValidationError(str(err)) from err
            return value
        raise ValidationError("must be a number of seconds or a duration such as 3m")

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> Any:
        return value


class StringMap(fields.Field):  # type: ignore[type-arg]
    """A map of string to string (or to quantity); errors name the entry as `field[key]`."""

    def __init__(self, quantities: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.quantities = quantities

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if not isinstance(value, dict):
            raise ValidationError("must be an object")
        errors: dict[str, list[str]] = {}
        out: dict[str, str] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                errors[f"[{key!r}]"] = ["keys must be strings"]
                continue
            if self.quantities:
                try:
                    out[key] = QuantityField()._deserialize(item, None, None)
                except ValidationError as err:
                    errors[f"[{key}]"] = (
                        [str(m) for m in err.messages] if isinstance(err.messages, list) else ["invalid"]
                    )
            elif not isinstance(item, str):
                errors[f"[{key}]"] = ["must be a string"]
            else:
                out[key] = item
        if errors:
            raise ValidationError(errors)
        return out

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> Any:
        return value


def _str_map() -> StringMap:
    return StringMap()


def _quantity_map() -> StringMap:
    return StringMap(quantities=True)


class _Base(Schema):
    class Meta:
        unknown = EXCLUDE


class MetadataSchema(_Base):
    name = StrictString()
    generateName = StrictString()
    uid = StrictString()
    resourceVersion = StrictString()
    labels = _str_map()
    annotations = _str_map()


class TaintSchema(_Base):
    key = StrictString(required=True)
    value = StrictString()
    effect = StrictString(required=True)
    timeAdded = StrictString(allow_none=True)


class RequirementSchema(_Base):
    key = StrictString(required=True)
    operator = StrictString(required=True)
    values = fields.List(StrictString())


class KubeletConfigurationSchema(_Base):
    clusterDNS = fields.List(StrictString())
    containerRuntime = StrictString()
    maxPods = StrictInteger()
    podsPerCore = StrictInteger()
    systemReserved = _quantity_map()
    kubeReserved = _quantity_map()
    evictionHard = _str_map()
    evictionSoft = _str_map()
    evictionSoftGracePeriod = _str_map()
    evictionMaxPodGracePeriod = DurationOrSeconds()
    imageGCHighThresholdPercent = StrictInteger()
    imageGCLowThresholdPercent = StrictInteger()
    cpuCFSQuota = StrictBoolean()


class LimitsSchema(_Base):
    resources = _quantity_map()


class ProviderRefSchema(_Base):
    apiVersion = StrictString()
    kind = StrictString()
    name = StrictString(required=True)


class ConsolidationSchema(_Base):
    enabled = StrictBoolean()


class ProvisionerSpecSchema(_Base):
    annotations = _str_map()
    labels = _str_map()
    taints = fields.List(fields.Nested(TaintSchema))
    startupTaints = fields.List(fields.Nested(TaintSchema))
    requirements = fields.List(fields.Nested(RequirementSchema))
    kubeletConfiguration = fields.Nested(KubeletConfigurationSchema)
    provider = fields.Dict()
    providerRef = fields.Nested(ProviderRefSchema)
    ttlSecondsAfterEmpty = StrictInteger()
    ttlSecondsUntilExpired = StrictInteger()
    limits = fields.Nested(LimitsSchema)
    weight = StrictInteger()
    consolidation = fields.Nested(ConsolidationSchema)


class ConditionSchema(_Base):
    type = StrictString(required=True)
    status = StrictString(required=True)
    severity = StrictString()
    reason = StrictString()
    message = StrictString()
    lastTransitionTime = StrictString()


class ProvisionerStatusSchema(_Base):
    resources = _quantity_map()
    conditions = fields.List(fields.Nested(ConditionSchema))
    lastScaleTime = StrictString(allow_none=True)


class ProvisionerSchema(_Base):
    apiVersion = StrictString()
    kind = StrictString()
    metadata = fields.Nested(MetadataSchema, required=True)
    spec = fields.Nested(ProvisionerSpecSchema, load_default=dict)
    status = fields.Nested(ProvisionerStatusSchema)


class MetadataOptionsSchema(_Base):
    httpEndpoint = StrictString()
    httpProtocolIPv6 = StrictString()
    httpPutResponseHopLimit = StrictInteger()
    httpTokens = StrictString()


class EBSSchema(_Base):
    deleteOnTermination = StrictBoolean()
    encrypted = StrictBoolean()
    iops = StrictInteger()
    kmsKeyID = StrictString()
    snapshotID = StrictString()
    throughput = StrictInteger()
    volumeSize = QuantityField()
    volumeType = StrictString()


class BlockDeviceMappingSchema(_Base):
    deviceName = StrictString()
    ebs = fields.Nested(EBSSchema)


class AWSProviderSchema(_Base):
    """The AWS provider struct, inlined in AWSNodeTemplate.spec and Provisioner.spec.provider."""

    subnetSelector = _str_map()
    securityGroupSelector = _str_map()
    amiFamily = StrictString()
    instanceProfile = StrictString()
    tags = _str_map()
    metadataOptions = fields.Nested(MetadataOptionsSchema)
    blockDeviceMappings = fields.List(fields.Nested(BlockDeviceMappingSchema))
    context = StrictString()
    launchTemplate = StrictString()
    apiVersion = StrictString()
    kind = StrictString()


class AWSNodeTemplateSpecSchema(AWSProviderSchema):
    userData = StrictString()
    amiSelector = _str_map()
    detailedMonitoring = StrictBoolean()


class SubnetStatusSchema(_Base):
    id = StrictString(required=True)
    zone = StrictString()


class SecurityGroupStatusSchema(_Base):
    id = StrictString(required=True)


class AWSNodeTemplateStatusSchema(_Base):
    subnets = fields.List(fields.Nested(SubnetStatusSchema))
    securityGroups = fields.List(fields.Nested(SecurityGroupStatusSchema))


class AWSNodeTemplateSchema(_Base):
    apiVersion = StrictString()
    kind = StrictString()
    metadata = fields.Nested(MetadataSchema, required=True)
    spec = fields.Nested(AWSNodeTemplateSpecSchema, load_default=dict)
    status = fields.Nested(AWSNodeTemplateStatusSchema)


# Built once: a schema instance is reusable and thread-safe for load(), and building one is costly.
PROVISIONER = ProvisionerSchema()
AWS_NODE_TEMPLATE = AWSNodeTemplateSchema()
AWS_PROVIDER_STRICT = AWSProviderSchema(unknown="raise")


def schema_errors(messages: Mapping[Any, Any] | list[Any], prefix: str = "") -> list[FieldError]:
    """Flatten marshmallow's nested error messages into FieldErrors with Kubernetes-style paths."""
    out: list[FieldError] = []
    if isinstance(messages, list):
        for msg in messages:
            if isinstance(msg, (dict, list)):
                out.extend(schema_errors(msg, prefix))
            else:
                out.append(FieldError(_message(str(msg)), (prefix or "<root>",)))
        return out
    for key, sub in messages.items():
        if isinstance(key, int):
            path = f"{prefix}[{key}]"
        elif isinstance(key, str) and key.startswith("["):
            path = f"{prefix}{key}"
        else:
            path = f"{prefix}.{key}" if prefix else str(key)
        out.extend(schema_errors(sub, path))
    return out


def _message(text: str) -> str:
    if text == "Missing data for required field.":
        return "missing field(s)"
    if text == "Invalid input type.":
        return "must be an object"
    if text == "Not a valid list.":
        return "must be a list"
    if text == "Not a valid mapping type.":
        return "must be an object"
    return text
