"""Karpenter v0.31's `karpenter-global-settings` ConfigMap as karpy settings. Pure.

Karpenter v0.31 users keep their global settings in that ConfigMap (in the controller's
namespace); karpy reads the same keys with Karpenter's names, parsers, defaults and validation
(karpenter-core `pkg/apis/settings`, karpenter `pkg/apis/settings`) and maps each to a field of
`Settings` (`KEYS`). `parse(data)` gives the values and every error, each naming its key; an
invalid ConfigMap changes nothing (the caller keeps its last good settings). `effective(base,
values)` lays the ConfigMap under what was set explicitly: a flag or a `KARPY_*` variable (what
the chart renders) wins over the ConfigMap, which wins over the defaults. Keys karpy does not
implement (`IGNORED`) are logged as ignored, never silently dropped. The watcher is `controller/settingswatch.py`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlparse

from controller.core.quantity import QuantityError, parse_duration
from controller.settings import Settings

CONFIGMAP = "karpenter-global-settings"
# Karpenter v0.31 `RestrictedTagPatterns`: tags it sets itself and no user may override.
RESTRICTED_TAGS = (
    re.compile(r"^kubernetes\.io/cluster/[0-9A-Za-z][A-Za-z0-9\-_]*$"),
    re.compile(r"^karpenter\.sh/provisioner-name$"),
    re.compile(r"^karpenter\.sh/managed-by$"),
)
IGNORED = ("aws.assumeRoleARN", "aws.assumeRoleDuration", "aws.reservedENIs")


def _string(raw: str) -> str:
    return raw


def _bool(raw: str) -> bool:
    """Go's strconv.ParseBool."""
    if raw in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if raw in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise ValueError(f"strconv.ParseBool: parsing {raw!r}: invalid syntax")


def _float(raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise ValueError(f"strconv.ParseFloat: parsing {raw!r}: invalid syntax") from None
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{raw!r} is not a finite number")
    return value


def _duration(raw: str) -> float:
    try:
        return float(parse_duration(raw))
    except QuantityError as err:
        raise ValueError(str(err)) from None


def _tags(raw: str) -> str:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ValueError(f"not a JSON object: {err}") from None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError("must be a JSON object of strings")
    return json.dumps(value, sort_keys=True)


@dataclass(frozen=True)
class Key:
    name: str  # Karpenter's key in the ConfigMap
    field: str  # the `Settings` field it sets
    parse: Callable[[str], Any]
    default: str  # Karpenter's default, as the README's table shows it
    check: Callable[[Any], str] | None = None  # "" or why the parsed value is invalid


def _endpoint(value: str) -> str:
    if not value:
        return ""
    url = urlparse(value)
    if not url.scheme or not url.hostname:
        return f"{value!r} not a valid clusterEndpoint URL"
    return ""


def _restricted(value: str) -> str:
    bad = [k for k in json.loads(value) for p in RESTRICTED_TAGS if p.match(k)]
    return f"tag contains a restricted tag key: {', '.join(sorted(bad))}" if bad else ""


def _not_negative(value: float) -> str:
    return "cannot be negative" if value < 0 else ""


def _positive(value: float) -> str:
    return "must be positive" if value <= 0 else ""


def _cluster_name(value: str) -> str:
    return "clusterName is required" if not value else ""


KEYS = (
    Key("aws.clusterName", "cluster_name", _string, "(required)", _cluster_name),
    Key("aws.clusterEndpoint", "aws_cluster_endpoint", _string, "(discovered)", _endpoint),
    Key("aws.clusterCABundle", "aws_cluster_ca_bundle", _string, '""'),
    Key("aws.defaultInstanceProfile", "aws_default_instance_profile", _string, '""'),
    Key("aws.interruptionQueueName", "aws_interruption_queue", _string, '""'),
    Key("aws.vmMemoryOverheadPercent", "aws_vm_memory_overhead_percent", _float, "0.075", _not_negative),
    Key("aws.enablePodENI", "aws_enable_pod_eni", _bool, "false"),
    Key("aws.enableENILimitedPodDensity", "aws_enable_eni_limited_pod_density", _bool, "true"),
    Key("aws.isolatedVPC", "aws_isolated_vpc", _bool, "false"),
    Key("aws.tags", "aws_tags", _tags, "{}", _restricted),
    Key("aws.nodeNameConvention", "aws_node_name_convention", _string, "ip-name",
        lambda v: "" if v in ("ip-name", "resource-name") else f"{v!r} is not ip-name or resource-name"),
    Key("batchMaxDuration", "batch_max_seconds", _duration, "10s", _positive),
    Key("batchIdleDuration", "batch_idle_seconds", _duration, "1s", _positive),
    Key("featureGates.driftEnabled", "drift_enabled", _bool, "false"),
)  # fmt: skip
BY_NAME = {k.name: k for k in KEYS}


@dataclass(frozen=True)
class Parsed:
    values: Mapping[str, Any]  # Settings field → value, for the keys present
    errors: tuple[str, ...]  # "aws.tags: …", one per bad key
    ignored: tuple[str, ...]  # keys present that karpy does not implement or know


def parse(data: Mapping[str, Any]) -> Parsed:
    """The ConfigMap's `data` as Settings values; every bad key is an error naming it."""
    values: dict[str, Any] = {}
    errors: list[str] = []
    ignored: list[str] = []
    for name in sorted(data):
        raw = data[name]
        key = BY_NAME.get(name)
        if key is None:
            ignored.append(name)
            continue
        if not isinstance(raw, str):
            errors.append(f"{name}: must be a string")
            continue
        try:
            value = key.parse(raw)
        except ValueError as err:
            errors.append(f"{name}: {err}")
            continue
        problem = key.check(value) if key.check is not None else ""
        if problem:
            errors.append(f"{name}: {problem}")
            continue
        values[key.field] = value
    idle, most = values.get("batch_idle_seconds"), values.get("batch_max_seconds")
    if idle is not None and most is not None and idle > most:
        errors.append("batchIdleDuration: must not be longer than batchMaxDuration")
    return Parsed(values, tuple(errors), tuple(ignored))


def effective(base: Settings, values: Mapping[str, Any]) -> Settings:
    """`base` with the ConfigMap's values for every field not set by a flag or the environment."""
    return replace(base, **{k: v for k, v in values.items() if k not in base.explicit})


def changed(old: Settings, new: Settings) -> tuple[str, ...]:
    """The fields (of those the ConfigMap can set) whose value differs."""
    return tuple(k.field for k in KEYS if getattr(old, k.field) != getattr(new, k.field))
