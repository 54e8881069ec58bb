"""The typed Provisioner and AWSNodeTemplate: the wire format loads, converts and dumps back."""

from __future__ import annotations

from typing import Any

from controller.apis.load import load_awsnodetemplate, load_provisioner
from controller.apis.schemas import AWS_NODE_TEMPLATE, PROVISIONER
from tests.support.seeds import is_reference_example, provisioner_documents


def test_seed_provisioners_round_trip_through_the_typed_object() -> None:
    for _, doc in provisioner_documents():
        if is_reference_example(doc):
            continue
        provisioner = load_provisioner(doc)
        wire = provisioner.to_wire()
        assert PROVISIONER.load(wire) == PROVISIONER.load(PROVISIONER.dump(wire))
        assert load_provisioner(wire) == provisioner


def test_every_field_of_the_reference_example_is_read() -> None:
    doc = next(d for _, d in provisioner_documents() if is_reference_example(d))
    doc = {**doc, "spec": {k: v for k, v in doc["spec"].items() if k != "ttlSecondsAfterEmpty"}}
    p = load_provisioner(doc)
    assert p.provider_ref == {"name": "default"} and p.provider_ref_name == "default"
    assert [str(t) for t in p.taints] == ["example.com/special-taint:NoSchedule"]
    assert [str(t) for t in p.startup_taints] == ["example.com/another-taint:NoSchedule"]
    assert p.labels == {"billing-team": "my-team"}
    assert p.limits == {"cpu": "1000", "memory": "1000Gi"}
    assert p.consolidation_enabled and p.ttl_seconds_until_expired == 2592000 and p.weight == 10
    k = p.kubelet
    assert k is not None
    assert k.cluster_dns == ("10.0.1.100",) and k.container_runtime == "containerd"
    assert k.max_pods == 20 and k.pods_per_core == 2
    assert k.system_reserved == {"cpu": "100m", "memory": "100Mi", "ephemeral-storage": "1Gi"}
    assert k.kube_reserved["ephemeral-storage"] == "3Gi"
    assert k.eviction_hard["memory.available"] == "5%" and k.eviction_soft["memory.available"] == "500Mi"
    assert k.eviction_soft_grace_period["nodefs.available"] == "1m30s"
    assert k.eviction_max_pod_grace_period == 180  # "3m"
    assert len(p.requirements) == 7  # six written + kubernetes.io/os defaulted


def test_status_is_read_and_dumped() -> None:
    status: dict[str, Any] = {
        "resources": {"cpu": "4", "memory": "16Gi"},
        "conditions": [{"type": "Active", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "lastScaleTime": "2026-01-01T00:00:00Z",
    }
    p = load_provisioner({"metadata": {"name": "a"}, "spec": {}, "status": status})
    assert p.status.resources == {"cpu": "4", "memory": "16Gi"}
    assert p.status.conditions[0].type == "Active"
    assert p.to_wire()["status"] == status


def test_awsnodetemplate_round_trip() -> None:
    doc = {
        "apiVersion": "karpenter.k8s.aws/v1alpha1",
        "kind": "AWSNodeTemplate",
        "metadata": {"name": "default"},
        "spec": {
            "subnetSelector": {"karpenter.sh/discovery": "demo"},
            "securityGroupSelector": {"karpenter.sh/discovery": "demo"},
            "amiFamily": "Bottlerocket",
            "instanceProfile": "KarpenterNodeInstanceProfile",
            "tags": {"team": "a"},
            "metadataOptions": {"httpEndpoint": "enabled", "httpPutResponseHopLimit": 2, "httpTokens": "required"},
            "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100Gi", "volumeType": "gp3"}}],
            "userData": "[settings.kubernetes]\nmax-pods = 110\n",
            "detailedMonitoring": True,
        },
        "status": {"subnets": [{"id": "subnet-1", "zone": "us-west-2a"}], "securityGroups": [{"id": "sg-1"}]},
    }
    template = load_awsnodetemplate(doc)
    assert template.ami_family == "Bottlerocket" and template.status_subnets[0]["zone"] == "us-west-2a"
    assert AWS_NODE_TEMPLATE.load(template.to_wire()) == AWS_NODE_TEMPLATE.load(doc)
