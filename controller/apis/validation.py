"""Validation of Provisioners as the validating webhook applies it (spec §3.1–3.2).

Pure. `validate_provisioner()` takes a schema-checked wire document and returns every
`FieldError` at once (all rules run, errors accumulate), each naming its field path
(`spec.requirements[2].operator`, `spec.kubeletConfiguration.evictionSoft`, `metadata.name`).

karpy decisions (spec decisions table): `ttlSecondsAfterEmpty` with `consolidation.enabled:
true` is rejected by presence; `provider` and `providerRef` are optional but exclusive; weight
1..100, `maxPods`/`podsPerCore` >= 0 and image-GC percents 0..100 are checked here as well as
in the CRD; taint effect errors are reported at `spec.taints[i].effect` (Karpenter says
`effect[i]`), which points a user at the field to fix.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from controller.apis.awsnodetemplate import validate_aws_provider
from controller.apis.errors import FieldError, clip, got_both, invalid_key, invalid_value, out_of_bounds
from controller.apis.metadata import validate_metadata
from controller.core import labels as L
from controller.core.quantity import QuantityError, parse_quantity

EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
RESERVED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pid")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def validate_provisioner(obj: dict[str, Any]) -> list[FieldError]:
    """Every rule of spec §3.1 (and §3.2 for an inline provider) over a schema-checked document."""
    spec: dict[str, Any] = obj.get("spec") or {}
    errors = validate_metadata(obj.get("metadata") or {})
    errors += _validate_ttls(spec)
    errors += _validate_provider(spec)
    errors += _validate_labels(spec.get("labels") or {})
    errors += _validate_taints(spec)
    errors += _validate_requirements(spec.get("requirements") or [])
    if spec.get("kubeletConfiguration") is not None:
        errors += _validate_kubelet(spec["kubeletConfiguration"])
    weight = spec.get("weight")
    if weight is not None and not 1 <= weight <= 100:
        errors.append(out_of_bounds(1, weight, 100, "spec.weight"))
    return errors


def _validate_ttls(spec: dict[str, Any]) -> list[FieldError]:
    errors = []
    expired = spec.get("ttlSecondsUntilExpired")
    if expired is not None and expired < 0:
        errors.append(invalid_value("cannot be negative", "spec.ttlSecondsUntilExpired"))
    empty = spec.get("ttlSecondsAfterEmpty")
    if empty is not None and empty < 0:
        errors.append(invalid_value("cannot be negative", "spec.ttlSecondsAfterEmpty"))
    elif empty is not None and (spec.get("consolidation") or {}).get("enabled") is True:
        errors.append(got_both("spec.ttlSecondsAfterEmpty", "spec.consolidation.enabled"))
    return errors


def _validate_provider(spec: dict[str, Any]) -> list[FieldError]:
    if spec.get("provider") is not None and spec.get("providerRef") is not None:
        return [got_both("spec.provider", "spec.providerRef")]
    if spec.get("provider") is not None:
        return validate_aws_provider(spec["provider"], "spec.provider", inline=True)
    return []


def _validate_labels(labels: dict[str, str]) -> list[FieldError]:
    errors = []
    for key, value in labels.items():
        if key == L.PROVISIONER_NAME:
            errors.append(invalid_key(key, "spec.labels", "restricted"))
            continue
        reasons = L.qualified_name_errors(key)
        if reasons:
            errors.append(invalid_key(key, "spec.labels", "; ".join(reasons)))
        value_reasons = L.label_value_errors(value)
        if value_reasons:
            errors.append(invalid_value(f"{value}, {'; '.join(value_reasons)}", f"spec.labels[{key}]"))
        if L.is_restricted_label(L.normalize_key(key)):
            errors.append(invalid_key(key, "spec.labels", L.restricted_label_message(key)))
    return errors


def _validate_taints(spec: dict[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for field in ("taints", "startupTaints"):
        for i, taint in enumerate(spec.get(field) or []):
            path = f"spec.{field}[{i}]"
            key, value, effect = taint.get("key", ""), taint.get("value", "") or "", taint.get("effect", "") or ""
            if not key:
                errors.append(FieldError("invalid value: taint key must not be empty", (f"{path}.key",)))
            else:
                for reason in L.qualified_name_errors(key):
                    errors.append(invalid_value(f"{key}, {reason}", f"{path}.key"))
            if value:
                # Karpenter checks a qualified name; the API server then wants a label value on
                # the Node ("a/b" passes the first, not the second): both, so no Node is refused
                reasons = L.qualified_name_errors(value) or L.label_value_errors(value)
                for reason in reasons:
                    errors.append(invalid_value(f"{value}, {reason}", f"{path}.value"))
            if effect not in (*TAINT_EFFECTS, ""):
                errors.append(
                    invalid_value(f"{effect}, effect must be one of {', '.join(TAINT_EFFECTS)}", f"{path}.effect")
                )
            if (key, effect) in seen:
                errors.append(FieldError(f"duplicate taint Key/Effect pair {key}={effect}", (path,)))
            seen.add((key, effect))
    return errors


MAX_VALUE_ERRORS = 10


def requirement_errors(req: dict[str, Any], path: str) -> list[FieldError]:
    """Karpenter's ValidateRequirement (shared with pod node affinity), at `path`.

    Bounded: the key and values are clipped where quoted, each bad value is named once and at
    most `MAX_VALUE_ERRORS` of them, then how many more (issue 14)."""
    raw_key, operator, values = req.get("key", ""), req.get("operator", ""), req.get("values") or []
    key = L.normalize_key(raw_key)
    shown = clip(key)
    errors = []
    if operator not in L.SUPPORTED_OPERATORS:
        errors.append(
            FieldError(
                f"key {shown} has an unsupported operator {clip(operator, 40)} not in {list(L.SUPPORTED_OPERATORS)}",
                (f"{path}.operator",),
            )
        )
    if L.is_restricted_label(key):
        errors.append(FieldError(L.restricted_label_message(shown), (f"{path}.key",)))
    for reason in L.qualified_name_errors(key):
        errors.append(FieldError(f"key {shown} is not a qualified name, {reason}", (f"{path}.key",)))
    bad: dict[str, list[str]] = {}
    for value in values:
        text = value if isinstance(value, str) else repr(type(value))
        if text not in bad:
            reasons = L.label_value_errors(value)
            if reasons:
                bad[text] = reasons
    for value, reasons in list(bad.items())[:MAX_VALUE_ERRORS]:
        for reason in reasons:
            message = f"invalid value {clip(value, 100)} for key {shown}, {reason}"
            errors.append(FieldError(message, (f"{path}.values",)))
    if len(bad) > MAX_VALUE_ERRORS:
        more = len(bad) - MAX_VALUE_ERRORS
        errors.append(FieldError(f"and {more} more invalid values for key {shown}", (f"{path}.values",)))
    if operator == "In" and not values:
        errors.append(FieldError(f"key {shown} with operator In must have a value defined", (f"{path}.values",)))
    if operator in ("Gt", "Lt") and not (len(values) == 1 and _non_negative_int(values[0])):
        errors.append(
            FieldError(
                f"key {shown} with operator {operator} must have a single positive integer value", (f"{path}.values",)
            )
        )
    return errors


def _non_negative_int(text: str) -> bool:
    number = L.parse_int(text)  # strconv.Atoi, as Karpenter: no spaces, underscores or newlines
    return number is not None and number >= 0


def _validate_requirements(reqs: list[dict[str, Any]]) -> list[FieldError]:
    errors = []
    for i, req in enumerate(reqs):
        path = f"spec.requirements[{i}]"
        if L.normalize_key(req.get("key", "")) == L.PROVISIONER_NAME:
            errors.append(FieldError(f"{L.PROVISIONER_NAME} is restricted", (f"{path}.key",)))
            continue
        errors += requirement_errors(req, path)
    return errors


KUBELET_IMAGE_GC_HIGH, KUBELET_IMAGE_GC_LOW = 85, 80  # the kubelet's defaults


def _validate_kubelet(kubelet: dict[str, Any]) -> list[FieldError]:
    base = "spec.kubeletConfiguration"
    errors = []
    for field in ("evictionHard", "evictionSoft"):
        for signal, value in (kubelet.get(field) or {}).items():
            if signal not in EVICTION_SIGNALS:
                errors.append(invalid_key(signal, f"{base}.{field}", f"supported signals: {list(EVICTION_SIGNALS)}"))
            errors += _threshold_errors(value, f'{base}.{field}["{signal}"]')
    for signal in kubelet.get("evictionSoftGracePeriod") or {}:
        if signal not in EVICTION_SIGNALS:
            errors.append(
                invalid_key(signal, f"{base}.evictionSoftGracePeriod", f"supported signals: {list(EVICTION_SIGNALS)}")
            )
    soft = set(kubelet.get("evictionSoft") or {})
    grace = set(kubelet.get("evictionSoftGracePeriod") or {})
    for signal in sorted(soft - grace):
        errors.append(
            invalid_key(signal, f"{base}.evictionSoft", "Key does not have a matching evictionSoftGracePeriod")
        )
    for signal in sorted(grace - soft):
        errors.append(
            invalid_key(
                signal, f"{base}.evictionSoftGracePeriod", "Key does not have a matching evictionSoft threshold value"
            )
        )
    for field in ("kubeReserved", "systemReserved"):
        for name, quantity in (kubelet.get(field) or {}).items():
            if name not in RESERVED_RESOURCES:
                errors.append(invalid_key(name, f"{base}.{field}", f"supported resources: {list(RESERVED_RESOURCES)}"))
            elif parse_quantity(quantity) < 0:
                errors.append(
                    invalid_value("Value cannot be a negative resource quantity", f'{base}.{field}["{name}"]')
                )
    for field in ("maxPods", "podsPerCore"):
        if (kubelet.get(field) or 0) < 0:
            errors.append(invalid_value(f"{kubelet[field]}, must be at least 0", f"{base}.{field}"))
    for field in ("imageGCHighThresholdPercent", "imageGCLowThresholdPercent"):
        value = kubelet.get(field)
        if value is not None and not 0 <= value <= 100:
            errors.append(out_of_bounds(0, value, 100, f"{base}.{field}"))
    high, low = kubelet.get("imageGCHighThresholdPercent"), kubelet.get("imageGCLowThresholdPercent")
    # the kubelet refuses low >= high, counting an unset one at its default (high 85, low 80)
    if (high is not None or low is not None) and (low if low is not None else KUBELET_IMAGE_GC_LOW) >= (
        high if high is not None else KUBELET_IMAGE_GC_HIGH
    ):
        if high is not None:
            errors.append(
                invalid_value(
                    "must be greater than imageGCLowThresholdPercent (the kubelet's default: 80)",
                    f"{base}.imageGCHighThresholdPercent",
                )
            )
        if low is not None:
            errors.append(
                invalid_value(
                    "must be less than imageGCHighThresholdPercent (the kubelet's default: 85)",
                    f"{base}.imageGCLowThresholdPercent",
                )
            )
    return errors


def _threshold_errors(value: str, path: str) -> list[FieldError]:
    if value.endswith("%"):
        try:
            percent = Decimal(value[:-1])
            if not percent.is_finite():
                raise ValueError(value)
        except (ArithmeticError, ValueError):
            return [invalid_value(f"Value could not be parsed as a percentage value, {value}", path)]
        if percent < 0:
            return [invalid_value(f"Percentage values cannot be negative, {value}", path)]
        if percent > 100:
            return [invalid_value(f"Percentage values cannot be greater than 100, {value}", path)]
        return []
    try:
        quantity = parse_quantity(value)
    except QuantityError:
        return [invalid_value(f"Value could not be parsed as a resource quantity, {value}", path)]
    if quantity < 0:  # the kubelet refuses it at start ("eviction threshold … must be positive")
        return [invalid_value(f"Value cannot be a negative resource quantity, {value}", path)]
    return []
