"""Drift hashes: which fields drift a node, and that the canonical form is stable across versions."""

from __future__ import annotations

from typing import Any

import pytest

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.apis.drifthash import (
    HashState,
    node_template_hash,
    node_template_hash_annotations,
    provisioner_hash,
    provisioner_hash_annotations,
    static_drift,
)
from controller.apis.provisioner import Provisioner
from controller.core import labels as L

BASE_SPEC: dict[str, Any] = {
    "labels": {"team": "a", "tier": "web"},
    "annotations": {"example.com/owner": "infra"},
    "taints": [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}],
    "startupTaints": [{"key": "cni", "effect": "NoSchedule"}],
    "kubeletConfiguration": {"maxPods": 50, "systemReserved": {"memory": "1Gi"}},
    "requirements": [{"key": L.CAPACITY_TYPE, "operator": "In", "values": ["spot"]}],
    "weight": 10,
    "limits": {"resources": {"cpu": "100"}},
    "ttlSecondsUntilExpired": 3600,
    "providerRef": {"name": "default"},
}


def provisioner(**changes: Any) -> Provisioner:
    spec = {**BASE_SPEC, **changes}
    return Provisioner.from_wire({"metadata": {"name": "default"}, "spec": {k: v for k, v in spec.items() if v}})


def template(**changes: Any) -> AWSNodeTemplate:
    spec = {"subnetSelector": {"env": "prod"}, "securityGroupSelector": {"env": "prod"}, "amiFamily": "AL2", **changes}
    return AWSNodeTemplate.from_wire({"metadata": {"name": "default"}, "spec": {k: v for k, v in spec.items() if v}})


def test_the_canonical_form_is_pinned() -> None:
    # Nodes in the field carry these values: changing the canonical form without bumping its
    # version (PROVISIONER_HASH_VERSION / NODE_TEMPLATE_HASH_VERSION) would drift every node.
    assert provisioner_hash(provisioner()) == "12182638605714018374"
    assert node_template_hash(template()) == "6610398947447042265"


@pytest.mark.parametrize(
    "change",
    [
        {"labels": {"team": "b", "tier": "web"}},
        {"annotations": {}},
        {"taints": [{"key": "dedicated", "value": "api", "effect": "NoSchedule"}]},
        {"startupTaints": []},
        {"kubeletConfiguration": {"maxPods": 60, "systemReserved": {"memory": "1Gi"}}},
        {"kubeletConfiguration": {"maxPods": 50, "systemReserved": {"memory": "2Gi"}}},
        {"kubeletConfiguration": {"maxPods": 50, "systemReserved": {"memory": "1Gi"}, "cpuCFSQuota": False}},
    ],
    ids=["label", "annotation", "taint", "startup-taint", "kubelet-max-pods", "kubelet-reserved", "kubelet-cfs"],
)
def test_fields_that_shape_the_node_change_the_provisioner_hash(change: dict[str, Any]) -> None:
    assert provisioner_hash(provisioner(**change)) != provisioner_hash(provisioner())


@pytest.mark.parametrize(
    "change",
    [
        {"weight": 90},
        {"limits": {"resources": {"cpu": "5"}}},
        {"ttlSecondsUntilExpired": None, "ttlSecondsAfterEmpty": 30},
        {"consolidation": {"enabled": True}},
        {"requirements": [{"key": L.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}]},
        {"providerRef": {"name": "other"}},
    ],
    ids=["weight", "limits", "ttls", "consolidation", "requirements", "provider-ref"],
)
def test_fields_that_shape_no_node_leave_the_provisioner_hash(change: dict[str, Any]) -> None:
    assert provisioner_hash(provisioner(**change)) == provisioner_hash(provisioner())


def test_equivalent_spellings_hash_the_same() -> None:
    reordered = provisioner(
        labels={"tier": "web", "team": "a"},
        taints=list(reversed(BASE_SPEC["taints"])),
        kubeletConfiguration={"systemReserved": {"memory": "1024Mi"}, "maxPods": 50},
    )
    assert provisioner_hash(reordered) == provisioner_hash(provisioner())


@pytest.mark.parametrize(
    "change",
    [
        {"amiFamily": "Bottlerocket"},
        {"userData": "echo hi"},
        {"tags": {"team": "a"}},
        {"instanceProfile": "nodes"},
        {"metadataOptions": {"httpTokens": "optional"}},
        {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "50Gi"}}]},
        {"detailedMonitoring": True},
        {"context": "cr-123"},
    ],
)
def test_template_fields_that_shape_the_node_change_its_hash(change: dict[str, Any]) -> None:
    assert node_template_hash(template(**change)) != node_template_hash(template())


@pytest.mark.parametrize(
    "change",
    [
        {"amiSelector": {"aws-ids": "ami-123"}},
        {"subnetSelector": {"env": "dev"}},
        {"securityGroupSelector": {"aws-ids": "sg-1"}},
        {"amiFamily": None},  # absent = AL2, the default
        {"detailedMonitoring": False},
    ],
)
def test_selectors_and_defaults_leave_the_template_hash(change: dict[str, Any]) -> None:
    assert node_template_hash(template(**change)) == node_template_hash(template())


def test_volume_sizes_are_compared_as_quantities() -> None:
    gib = template(blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi"}}])
    bytes_ = template(blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "21474836480"}}])
    assert node_template_hash(gib) == node_template_hash(bytes_)


def test_static_drift_compares_stamp_and_version() -> None:
    now = provisioner_hash_annotations(provisioner())
    assert static_drift(now, now) is HashState.SAME
    assert static_drift({}, now) is HashState.UNSTAMPED
    changed = provisioner_hash_annotations(provisioner(labels={"team": "b"}))
    assert static_drift(changed, now) is HashState.DRIFTED
    older = {**changed, L.PROVISIONER_HASH_VERSION: "v0"}
    assert static_drift(older, now) is HashState.RESTAMP
    stamped = node_template_hash_annotations(template())
    assert set(stamped) == {L.NODE_TEMPLATE_HASH, L.NODE_TEMPLATE_HASH_VERSION}
    assert static_drift(stamped, node_template_hash_annotations(template(userData="x"))) is HashState.DRIFTED
