"""Every validation rule of spec §3.1–3.3: one accepted and one rejected object each, by field path."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from controller.apis.errors import InvalidObjectError, render
from controller.apis.load import check_awsnodetemplate, check_provisioner, load_provisioner
from tests.builders.wire import make_awsnodetemplate, make_provisioner
from tests.controller.core.test_labels import ALPHABET, go_parse_int, k8s_label_value, k8s_qualified_name


def req(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def kubelet(**fields: Any) -> dict[str, Any]:
    return {"kubeletConfiguration": fields}


@dataclass
class Rule:
    accepted: dict[str, Any]
    rejected: dict[str, Any]
    path: str  # the field path the rejection must name
    text: str = ""  # and a phrase of its message


def named(obj: dict[str, Any], name: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"] = {"name": name}
    return out


P = make_provisioner
T = make_awsnodetemplate
RULES: dict[str, Rule] = {
    # metadata
    "name is a DNS-1035 label": Rule(named(P(), "gpu-1"), named(P(), "1gpu"), "metadata.name", "DNS 1035"),
    "name is lower case": Rule(named(P(), "abc"), named(P(), "ABC"), "metadata.name"),
    "name is required": Rule(P(), {"metadata": {}, "spec": {}}, "metadata.name", "missing"),
    # TTLs
    "ttlSecondsUntilExpired not negative": Rule(
        P(ttlSecondsUntilExpired=0), P(ttlSecondsUntilExpired=-1), "spec.ttlSecondsUntilExpired", "negative"
    ),
    "ttlSecondsAfterEmpty not negative": Rule(
        P(ttlSecondsAfterEmpty=0), P(ttlSecondsAfterEmpty=-5), "spec.ttlSecondsAfterEmpty", "negative"
    ),
    "ttlSecondsAfterEmpty excludes consolidation": Rule(
        P(ttlSecondsAfterEmpty=30, consolidation={"enabled": False}),
        P(ttlSecondsAfterEmpty=0, consolidation={"enabled": True}),
        "spec.consolidation.enabled",
        "expected exactly one, got both",
    ),
    # provider / providerRef (karpy: at most one)
    "provider and providerRef exclusive": Rule(
        P(providerRef={"name": "default"}),
        P(
            providerRef={"name": "default"},
            provider={"subnetSelector": {"a": "b"}, "securityGroupSelector": {"a": "b"}},
        ),
        "spec.providerRef",
        "got both",
    ),
    "inline provider follows AWS rules": Rule(
        P(provider={"subnetSelector": {"a": "b"}, "securityGroupSelector": {"a": "b"}}),
        P(provider={"securityGroupSelector": {"a": "b"}}),
        "spec.provider.subnetSelector",
        "missing",
    ),
    "inline provider is decoded strictly": Rule(
        P(provider={"subnetSelector": {"a": "b"}, "securityGroupSelector": {"a": "b"}}),
        P(provider={"subnetSelector": {"a": "b"}, "securityGroupSelector": {"a": "b"}, "userData": "x"}),
        "spec.provider.userData",
    ),
    # labels
    "label key not provisioner-name": Rule(
        P(labels={"team": "a"}), P(labels={"karpenter.sh/provisioner-name": "x"}), "spec.labels", "restricted"
    ),
    "label key is a qualified name": Rule(P(labels={"a.b/c": "d"}), P(labels={"a b": "d"}), "spec.labels"),
    "label value is a label value": Rule(P(labels={"team": ""}), P(labels={"team": "-x-"}), "spec.labels[team]"),
    "label key not in a restricted domain": Rule(
        P(labels={"node.kubernetes.io/pool": "a"}), P(labels={"example.k8s.io/x": "a"}), "spec.labels", "restricted"
    ),
    "label hostname is restricted": Rule(
        P(labels={"kops.k8s.io/x": "a"}), P(labels={"kubernetes.io/hostname": "a"}), "spec.labels", "restricted"
    ),
    "restricted domain is a proper domain (karpy)": Rule(
        P(labels={"notkubernetes.io/x": "a"}), P(labels={"sub.karpenter.sh/x": "a"}), "spec.labels", "restricted"
    ),
    # taints
    "taint key required": Rule(
        P(taints=[{"key": "a", "effect": "NoSchedule"}]),
        P(taints=[{"key": "", "effect": "NoSchedule"}]),
        "spec.taints[0].key",
    ),
    "taint key qualified": Rule(
        P(taints=[{"key": "a/b", "effect": "NoSchedule"}]),
        P(taints=[{"key": "a//b", "effect": "NoSchedule"}]),
        "spec.taints[0].key",
    ),
    "taint value qualified": Rule(
        P(taints=[{"key": "a", "value": "a.b_c-d", "effect": "NoSchedule"}]),
        P(taints=[{"key": "a", "value": "???", "effect": "NoSchedule"}]),
        "spec.taints[0].value",
    ),
    "taint value a label value too (the Node's)": Rule(
        P(taints=[{"key": "a", "value": "b", "effect": "NoSchedule"}]),
        P(taints=[{"key": "a", "value": "a/b", "effect": "NoSchedule"}]),
        "spec.taints[0].value",
    ),
    "taint effect enum": Rule(
        P(taints=[{"key": "a", "effect": "NoExecute"}]),
        P(taints=[{"key": "a", "effect": "Sometimes"}]),
        "spec.taints[0].effect",
    ),
    "startup taint effect enum": Rule(
        P(startupTaints=[{"key": "a", "effect": "PreferNoSchedule"}]),
        P(startupTaints=[{"key": "a", "effect": "Never"}]),
        "spec.startupTaints[0].effect",
    ),
    "taint key/effect unique across taints and startupTaints": Rule(
        P(taints=[{"key": "a", "effect": "NoSchedule"}], startupTaints=[{"key": "a", "effect": "NoExecute"}]),
        P(taints=[{"key": "a", "effect": "NoSchedule"}], startupTaints=[{"key": "a", "effect": "NoSchedule"}]),
        "spec.startupTaints[0]",
        "duplicate taint",
    ),
    # requirements
    "requirement key not provisioner-name": Rule(
        P(requirements=[req("team", "In", "a")]),
        P(requirements=[req("karpenter.sh/provisioner-name", "In", "a")]),
        "spec.requirements[0].key",
        "restricted",
    ),
    "requirement operator supported": Rule(
        P(requirements=[req("team", "NotIn")]),
        P(requirements=[req("team", "In", "a"), req("team", "Like", "a")]),
        "spec.requirements[1].operator",
        "unsupported operator",
    ),
    "requirement key not restricted": Rule(
        P(requirements=[req("topology.kubernetes.io/zone", "In", "a")]),
        P(requirements=[req("karpenter.k8s.aws/instance-ami-id", "In", "a")]),
        "spec.requirements[0].key",
        "restricted",
    ),
    "requirement alias normalised before the restricted check": Rule(
        P(requirements=[req("failure-domain.beta.kubernetes.io/zone", "In", "a")]),
        P(requirements=[req("beta.kubernetes.io/other", "In", "a")]),
        "spec.requirements[0].key",
        "restricted",
    ),
    "requirement key qualified": Rule(
        P(requirements=[req("a.b/c", "Exists")]),
        P(requirements=[req("a/b/c", "Exists")]),
        "spec.requirements[0].key",
        "qualified name",
    ),
    "requirement values are label values": Rule(
        P(requirements=[req("team", "In", "a-b")]),
        P(requirements=[req("team", "In", "a b")]),
        "spec.requirements[0].values",
        "invalid value",
    ),
    "requirement In needs a value": Rule(
        P(requirements=[req("team", "NotIn")]),
        P(requirements=[req("team", "In")]),
        "spec.requirements[0].values",
        "must have a value",
    ),
    "requirement Gt needs one non-negative integer": Rule(
        P(requirements=[req("karpenter.k8s.aws/instance-cpu", "Gt", "0")]),
        P(requirements=[req("karpenter.k8s.aws/instance-cpu", "Gt", "-1")]),
        "spec.requirements[0].values",
        "single positive integer",
    ),
    "requirement Lt needs exactly one value": Rule(
        P(requirements=[req("karpenter.k8s.aws/instance-cpu", "Lt", "8")]),
        P(requirements=[req("karpenter.k8s.aws/instance-cpu", "Lt", "8", "9")]),
        "spec.requirements[0].values",
        "single positive integer",
    ),
    "contradictory requirements are not rejected": Rule(
        P(requirements=[req("team", "In", "a"), req("team", "NotIn", "a")]),
        P(requirements=[req("team", "In", "a"), req("team", "Bogus", "a")]),
        "spec.requirements[1].operator",
    ),
    # kubelet configuration
    "evictionHard signal supported": Rule(
        P(**kubelet(evictionHard={"memory.available": "5%"})),
        P(**kubelet(evictionHard={"memory.free": "5%"})),
        "spec.kubeletConfiguration.evictionHard",
        "memory.free",
    ),
    "eviction percentage parses": Rule(
        P(**kubelet(evictionHard={"nodefs.available": "10.5%"})),
        P(**kubelet(evictionHard={"nodefs.available": "ten%"})),
        'spec.kubeletConfiguration.evictionHard["nodefs.available"]',
        "percentage",
    ),
    "eviction percentage not negative": Rule(
        P(**kubelet(evictionHard={"nodefs.available": "0%"})),
        P(**kubelet(evictionHard={"nodefs.available": "-1%"})),
        'spec.kubeletConfiguration.evictionHard["nodefs.available"]',
        "cannot be negative",
    ),
    "eviction percentage at most 100": Rule(
        P(**kubelet(evictionHard={"nodefs.available": "100%"})),
        P(**kubelet(evictionHard={"nodefs.available": "101%"})),
        'spec.kubeletConfiguration.evictionHard["nodefs.available"]',
        "greater than 100",
    ),
    "eviction quantity parses": Rule(
        P(**kubelet(evictionHard={"memory.available": "500Mi"})),
        P(**kubelet(evictionHard={"memory.available": "500 megs"})),
        'spec.kubeletConfiguration.evictionHard["memory.available"]',
        "resource quantity",
    ),
    "evictionSoft signal supported": Rule(
        P(**kubelet(evictionSoft={"memory.available": "1Gi"}, evictionSoftGracePeriod={"memory.available": "1m"})),
        P(**kubelet(evictionSoft={"cpu.available": "1"}, evictionSoftGracePeriod={"cpu.available": "1m"})),
        "spec.kubeletConfiguration.evictionSoft",
        "cpu.available",
    ),
    "evictionSoftGracePeriod signal supported": Rule(
        P(**kubelet(evictionSoft={"pid.available": "10%"}, evictionSoftGracePeriod={"pid.available": "1m"})),
        P(**kubelet(evictionSoft={"pid.x": "10%"}, evictionSoftGracePeriod={"pid.x": "1m"})),
        "spec.kubeletConfiguration.evictionSoftGracePeriod",
        "pid.x",
    ),
    "evictionSoft needs a grace period": Rule(
        P(**kubelet(evictionSoft={"memory.available": "1Gi"}, evictionSoftGracePeriod={"memory.available": "1m"})),
        P(**kubelet(evictionSoft={"memory.available": "1Gi"})),
        "spec.kubeletConfiguration.evictionSoft",
        "matching evictionSoftGracePeriod",
    ),
    "grace period needs an evictionSoft": Rule(
        P(**kubelet()),
        P(**kubelet(evictionSoftGracePeriod={"memory.available": "1m"})),
        "spec.kubeletConfiguration.evictionSoftGracePeriod",
        "matching evictionSoft threshold",
    ),
    "kubeReserved resource names": Rule(
        P(**kubelet(kubeReserved={"cpu": "200m", "pid": "100"})),
        P(**kubelet(kubeReserved={"gpu": "1"})),
        "spec.kubeletConfiguration.kubeReserved",
        "gpu",
    ),
    "systemReserved not negative": Rule(
        P(**kubelet(systemReserved={"memory": "0"})),
        P(**kubelet(systemReserved={"cpu": "-100m"})),
        'spec.kubeletConfiguration.systemReserved["cpu"]',
        "negative",
    ),
    "imageGC low below high (equal: the kubelet refuses it)": Rule(
        P(**kubelet(imageGCHighThresholdPercent=60, imageGCLowThresholdPercent=50)),
        P(**kubelet(imageGCHighThresholdPercent=40, imageGCLowThresholdPercent=50)),
        "spec.kubeletConfiguration.imageGCLowThresholdPercent",
        "less than imageGCHighThresholdPercent",
    ),
    "imageGC percent at most 100": Rule(
        P(**kubelet(imageGCHighThresholdPercent=100)),
        P(**kubelet(imageGCHighThresholdPercent=101)),
        "spec.kubeletConfiguration.imageGCHighThresholdPercent",
    ),
    "maxPods not negative": Rule(
        P(**kubelet(maxPods=0)), P(**kubelet(maxPods=-1)), "spec.kubeletConfiguration.maxPods"
    ),
    "podsPerCore not negative": Rule(
        P(**kubelet(podsPerCore=2)), P(**kubelet(podsPerCore=-2)), "spec.kubeletConfiguration.podsPerCore"
    ),
    "evictionMaxPodGracePeriod is seconds or a duration": Rule(
        P(**kubelet(evictionMaxPodGracePeriod="3m")),
        P(**kubelet(evictionMaxPodGracePeriod="three minutes")),
        "spec.kubeletConfiguration.evictionMaxPodGracePeriod",
    ),
    # weight, limits, types
    "weight within 1..100": Rule(P(weight=100), P(weight=0), "spec.weight", "1 <= 0 <= 100"),
    "weight not above 100": Rule(P(weight=1), P(weight=101), "spec.weight"),
    "limits are quantities": Rule(
        P(limits={"resources": {"cpu": 1000, "memory": "1000Gi", "nvidia.com/gpu": 2}}),
        P(limits={"resources": {"cpu": "lots"}}),
        "spec.limits.resources[cpu]",
    ),
    "ttl is an integer": Rule(
        P(ttlSecondsUntilExpired=60), P(ttlSecondsUntilExpired="60"), "spec.ttlSecondsUntilExpired"
    ),
    "requirements is a list of objects": Rule(
        P(requirements=[]), P(requirements=[{"key": "a", "operator": 5}]), "spec.requirements[0].operator"
    ),
    "requirement key is required": Rule(
        P(requirements=[req("a", "Exists")]), P(requirements=[{"operator": "Exists"}]), "spec.requirements[0].key"
    ),
}

TEMPLATE_RULES: dict[str, Rule] = {
    "launchTemplate excludes securityGroupSelector": Rule(
        T(launchTemplate="lt", securityGroupSelector=None),
        T(launchTemplate="lt"),
        "spec.securityGroupSelector",
        "got both",
    ),
    "launchTemplate excludes amiFamily": Rule(
        T(amiFamily="AL2"),
        T(launchTemplate="lt", securityGroupSelector=None, amiFamily="AL2"),
        "spec.amiFamily",
        "both",
    ),
    "launchTemplate excludes non-empty blockDeviceMappings": Rule(
        T(launchTemplate="lt", securityGroupSelector=None, blockDeviceMappings=[]),
        T(
            launchTemplate="lt",
            securityGroupSelector=None,
            blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi"}}],
        ),
        "spec.blockDeviceMappings",
        "both",
    ),
    "subnetSelector required": Rule(T(subnetSelector={}), T(subnetSelector=None), "spec.subnetSelector", "missing"),
    "subnetSelector values not empty": Rule(
        T(subnetSelector={"Name": "*"}), T(subnetSelector={"Name": ""}), "spec.subnetSelector['Name']"
    ),
    "subnet ids valid (anchored)": Rule(
        T(subnetSelector={"aws-ids": "subnet-123abc,subnet-456"}),
        T(subnetSelector={"aws-ids": "xsubnet-123abc"}),
        "spec.subnetSelector['aws-ids']",
        "subnet-id",
    ),
    "securityGroupSelector required without launchTemplate": Rule(
        T(), T(securityGroupSelector=None), "spec.securityGroupSelector", "missing"
    ),
    "security group ids valid": Rule(
        T(securityGroupSelector={"aws-ids": "sg-123"}),
        T(securityGroupSelector={"aws-ids": "sg-"}),
        "spec.securityGroupSelector['aws-ids']",
    ),
    "tags keys not empty": Rule(T(tags={"team": ""}), T(tags={"": "x"}), "spec.tags", "empty tag keys"),
    "metadataOptions httpEndpoint enum": Rule(
        T(metadataOptions={"httpEndpoint": "enabled"}),
        T(metadataOptions={"httpEndpoint": "on"}),
        "spec.metadataOptions.httpEndpoint",
    ),
    "metadataOptions httpProtocolIPv6 enum": Rule(
        T(metadataOptions={"httpProtocolIPv6": "disabled"}),
        T(metadataOptions={"httpProtocolIPv6": "off"}),
        "spec.metadataOptions.httpProtocolIPv6",
    ),
    "metadataOptions hop limit 1..64": Rule(
        T(metadataOptions={"httpPutResponseHopLimit": 64}),
        T(metadataOptions={"httpPutResponseHopLimit": 65}),
        "spec.metadataOptions.httpPutResponseHopLimit",
    ),
    "metadataOptions httpTokens enum": Rule(
        T(metadataOptions={"httpTokens": "optional"}),
        T(metadataOptions={"httpTokens": "maybe"}),
        "spec.metadataOptions.httpTokens",
    ),
    "amiFamily enum": Rule(T(amiFamily="Bottlerocket"), T(amiFamily="Windows"), "spec.amiFamily", "not in"),
    "block device name required": Rule(
        T(blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi"}}]),
        T(blockDeviceMappings=[{"ebs": {"volumeSize": "20Gi"}}]),
        "spec.blockDeviceMappings[0].deviceName",
    ),
    "block device ebs required": Rule(
        T(blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"snapshotID": "snap-1"}}]),
        T(blockDeviceMappings=[{"deviceName": "/dev/xvda"}]),
        "spec.blockDeviceMappings[0].ebs",
    ),
    "volume type enum": Rule(
        T(blockDeviceMappings=[{"deviceName": "d", "ebs": {"volumeSize": "1G", "volumeType": "gp3"}}]),
        T(blockDeviceMappings=[{"deviceName": "d", "ebs": {"volumeSize": "1G", "volumeType": "gp9"}}]),
        "spec.blockDeviceMappings[0].ebs.volumeType",
    ),
    "volume size within 1G..64T": Rule(
        T(blockDeviceMappings=[{"deviceName": "d", "ebs": {"volumeSize": "64T"}}]),
        T(blockDeviceMappings=[{"deviceName": "d", "ebs": {"volumeSize": "999M"}}]),
        "spec.blockDeviceMappings[0].ebs.volumeSize",
        "1G <=",
    ),
    "volume size required without snapshot": Rule(
        T(blockDeviceMappings=[{"deviceName": "d", "ebs": {"snapshotID": "snap-1"}}]),
        T(blockDeviceMappings=[{"deviceName": "d", "ebs": {"volumeType": "gp3"}}]),
        "spec.blockDeviceMappings[0].ebs.volumeSize",
    ),
    "userData excludes launchTemplate": Rule(
        T(userData="#!/bin/bash"),
        T(launchTemplate="lt", securityGroupSelector=None, userData="x"),
        "spec.userData",
        "both",
    ),
    "amiSelector excludes launchTemplate": Rule(
        T(amiSelector={"aws-ids": "ami-123"}),
        T(launchTemplate="lt", securityGroupSelector=None, amiSelector={"a": "b"}),
        "spec.amiSelector",
        "both",
    ),
    "amiSelector ids valid": Rule(
        T(amiSelector={"aws::ids": "anything"}), T(amiSelector={"aws-ids": "img-1"}), "spec.amiSelector['aws-ids']"
    ),
    "amiSelector entries not empty": Rule(T(amiSelector={"k": "v"}), T(amiSelector={"k": ""}), "spec.amiSelector['k']"),
    "Custom amiFamily needs amiSelector": Rule(
        T(amiFamily="Custom", amiSelector={"aws::name": "x"}), T(amiFamily="Custom"), "spec.amiSelector", "missing"
    ),
    "template name DNS-1035": Rule(named(T(), "a"), named(T(), "A_b"), "metadata.name"),
}


@pytest.mark.parametrize("rule", RULES.values(), ids=RULES.keys())
def test_provisioner_rule(rule: Rule) -> None:
    assert check_provisioner(rule.accepted) == []
    errors = check_provisioner(rule.rejected)
    message = render(errors)
    assert any(rule.path in err.paths for err in errors), message
    assert rule.text in message


@pytest.mark.parametrize("rule", TEMPLATE_RULES.values(), ids=TEMPLATE_RULES.keys())
def test_awsnodetemplate_rule(rule: Rule) -> None:
    assert check_awsnodetemplate(rule.accepted) == []
    errors = check_awsnodetemplate(rule.rejected)
    message = render(errors)
    assert any(rule.path in err.paths for err in errors), message
    assert rule.text in message


def test_all_errors_accumulate() -> None:
    errors = check_provisioner(
        make_provisioner(
            ttlSecondsUntilExpired=-1,
            labels={"kubernetes.io/hostname": "x"},
            requirements=[req("team", "In")],
            weight=0,
        )
    )
    paths = {p for e in errors for p in e.paths}
    assert {"spec.ttlSecondsUntilExpired", "spec.labels", "spec.requirements[0].values", "spec.weight"} <= paths


# Only what the API server accepts is admitted (issue 20, defect 4): whatever a Provisioner puts
# on its Nodes — labels, requirement values, taints — must pass Kubernetes' own rules, or the
# launcher would buy an instance for a Node the API server then refuses.
FUZZ = st.text(alphabet=ALPHABET, max_size=20)


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(
    label_key=FUZZ | st.builds(lambda a, b: f"{a}/{b}", FUZZ, FUZZ),
    label_value=FUZZ,
    value=FUZZ,
    taint_key=FUZZ,
    taint_value=FUZZ,
)
@example(label_key="team", label_value="a\n", value="amd64", taint_key="t", taint_value="v")
@example(label_key="team", label_value="a", value="amd64\n", taint_key="t", taint_value="v")
@example(label_key="team", label_value="a", value="amd64", taint_key="t", taint_value="a/b")
def test_an_admitted_provisioner_puts_only_valid_labels_and_taints_on_its_nodes(
    label_key: str, label_value: str, value: str, taint_key: str, taint_value: str
) -> None:
    obj = P(
        labels={label_key: label_value},
        requirements=[req("example.com/tier", "In", value)],
        taints=[{"key": taint_key, "value": taint_value, "effect": "NoSchedule"}],
    )
    try:
        load_provisioner(obj)
    except InvalidObjectError:
        return
    assert k8s_qualified_name(label_key) and k8s_label_value(label_value)
    assert k8s_label_value(value)
    assert k8s_qualified_name(taint_key) and k8s_label_value(taint_value)


@settings(max_examples=300)
@given(st.text(alphabet=ALPHABET, max_size=8))
@example("2\n")
@example(" 2")
@example("2_0")
@example("-0")
@example("+2")
def test_gt_and_lt_take_only_what_strconv_atoi_reads(text: str) -> None:
    errors = check_provisioner(P(requirements=[req("example.com/size", "Gt", text)]))
    number = go_parse_int(text)  # and, like every requirement value, a label value ("-0", "+2" are not)
    assert (errors == []) is (number is not None and number >= 0 and k8s_label_value(text))
