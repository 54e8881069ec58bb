"""karpenter-global-settings' keys with Karpenter v0.31's names, parsers, defaults and rules."""

from __future__ import annotations

from typing import Any

import pytest

from controller.globalsettings import KEYS, changed, effective, parse
from controller.settings import Settings

EVERY_KEY = {
    "aws.clusterName": "prod",
    "aws.clusterEndpoint": "https://ABC.gr7.us-west-2.eks.amazonaws.com",
    "aws.clusterCABundle": "Q0E=",
    "aws.defaultInstanceProfile": "KarpenterNodeInstanceProfile-prod",
    "aws.interruptionQueueName": "prod-interruption",
    "aws.vmMemoryOverheadPercent": "0.1",
    "aws.enablePodENI": "true",
    "aws.enableENILimitedPodDensity": "false",
    "aws.isolatedVPC": "true",
    "aws.tags": '{"team": "infra", "env": "prod"}',
    "aws.nodeNameConvention": "resource-name",
    "batchMaxDuration": "1m30s",
    "batchIdleDuration": "2s",
    "featureGates.driftEnabled": "True",
}
EXPECTED: dict[str, Any] = {
    "cluster_name": "prod",
    "aws_cluster_endpoint": "https://ABC.gr7.us-west-2.eks.amazonaws.com",
    "aws_cluster_ca_bundle": "Q0E=",
    "aws_default_instance_profile": "KarpenterNodeInstanceProfile-prod",
    "aws_interruption_queue": "prod-interruption",
    "aws_vm_memory_overhead_percent": 0.1,
    "aws_enable_pod_eni": True,
    "aws_enable_eni_limited_pod_density": False,
    "aws_isolated_vpc": True,
    "aws_tags": '{"env": "prod", "team": "infra"}',
    "aws_node_name_convention": "resource-name",
    "batch_max_seconds": 90.0,
    "batch_idle_seconds": 2.0,
    "drift_enabled": True,
}


def test_every_key_maps_to_its_setting() -> None:
    parsed = parse(EVERY_KEY)
    assert parsed.errors == () and parsed.ignored == ()
    assert dict(parsed.values) == EXPECTED
    assert {k.field for k in KEYS} == set(EXPECTED)


def test_karpenters_defaults_are_karpys_defaults() -> None:
    """Without the ConfigMap a Karpenter user gets what Karpenter v0.31 would have used."""
    d = Settings()
    assert (d.batch_idle_seconds, d.batch_max_seconds, d.drift_enabled) == (1.0, 10.0, False)
    assert (d.aws_vm_memory_overhead_percent, d.aws_enable_eni_limited_pod_density) == (0.075, True)
    assert (d.aws_isolated_vpc, d.aws_tags, d.aws_node_name_convention) == (False, "", "ip-name")


BAD = [
    ("aws.clusterName", "", "clusterName is required"),
    ("aws.clusterEndpoint", "not a url", "not a valid clusterEndpoint URL"),
    ("aws.vmMemoryOverheadPercent", "-0.1", "cannot be negative"),
    ("aws.vmMemoryOverheadPercent", "lots", "ParseFloat"),
    ("aws.isolatedVPC", "yes", "ParseBool"),  # Go's ParseBool, not YAML's
    ("aws.tags", "[1]", "JSON object of strings"),
    ("aws.tags", '{"kubernetes.io/cluster/prod": "owned"}', "restricted tag key: kubernetes.io/cluster/prod"),
    ("aws.tags", '{"karpenter.sh/provisioner-name": "x"}', "restricted"),
    ("aws.tags", '{"karpenter.sh/managed-by": "x"}', "restricted"),
    ("batchMaxDuration", "10", "invalid duration"),
    ("batchIdleDuration", "0s", "must be positive"),
    ("featureGates.driftEnabled", "on", "ParseBool"),
    ("aws.nodeNameConvention", "dns", "ip-name or resource-name"),
]


@pytest.mark.parametrize(("key", "value", "says"), BAD, ids=[f"{k}={v}" for k, v, _ in BAD])
def test_a_bad_value_is_an_error_naming_its_key(key: str, value: str, says: str) -> None:
    parsed = parse({key: value, "batchIdleDuration": "1s"} if key != "batchIdleDuration" else {key: value})
    (error,) = parsed.errors
    assert error.startswith(f"{key}: ") and says in error
    assert "batch_idle_seconds" not in parsed.values or key != "batchIdleDuration"


def test_idle_longer_than_max_is_an_error() -> None:
    assert parse({"batchIdleDuration": "20s", "batchMaxDuration": "10s"}).errors == (
        "batchIdleDuration: must not be longer than batchMaxDuration",
    )


def test_keys_karpy_does_not_implement_are_reported() -> None:
    parsed = parse({"aws.assumeRoleARN": "arn:aws:iam::1:role/x", "aws.clusterName": "a", "typo": "1"})
    assert parsed.ignored == ("aws.assumeRoleARN", "typo") and parsed.values == {"cluster_name": "a"}


def test_flags_and_environment_win_over_the_configmap() -> None:
    base = Settings.from_args(None, environ={"KARPY_BATCH_IDLE_SECONDS": "3", "KARPY_AWS_CLUSTER_ENDPOINT": ""})
    assert base.explicit == {"batch_idle_seconds"}  # an empty variable (the chart's unset value) sets nothing
    got = effective(base, parse(EVERY_KEY).values)
    assert got.batch_idle_seconds == 3.0 and got.batch_max_seconds == 90.0 and got.cluster_name == "prod"
    assert got.aws_cluster_endpoint == EXPECTED["aws_cluster_endpoint"]
    assert changed(base, got) == tuple(k.field for k in KEYS if k.field != "batch_idle_seconds")
