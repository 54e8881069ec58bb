"""Provisioner → ProvisionerSpec (`controller/scheduling/provisioners.py`)."""

from __future__ import annotations

from controller.apis.load import load_provisioner
from controller.core.taints import Taint
from controller.scheduling.provisioners import by_weight, provisioner_spec
from tests.builders.scheduling import make_provisioner


def test_spec_of_a_defaulted_provisioner() -> None:
    doc = {
        "apiVersion": "karpenter.sh/v1alpha5",
        "kind": "Provisioner",
        "metadata": {"name": "team-a"},
        "spec": {
            "labels": {"team": "a"},
            "taints": [{"key": "dedicated", "value": "a", "effect": "NoSchedule"}],
            "startupTaints": [{"key": "init", "effect": "NoExecute"}],
            "limits": {"resources": {"cpu": "100", "memory": "400Gi"}},
            "kubeletConfiguration": {"maxPods": 30, "systemReserved": {"cpu": "100m"}},
            "weight": 7,
        },
    }
    spec = provisioner_spec(load_provisioner(doc))
    assert spec.name == "team-a" and spec.weight == 7
    reqs = spec.requirements
    assert reqs["karpenter.sh/provisioner-name"].values == {"team-a"}
    assert reqs["team"].values == {"a"}
    assert reqs["kubernetes.io/arch"].values == {"amd64"}  # the webhook's defaults
    assert reqs["karpenter.sh/capacity-type"].values == {"on-demand"}
    assert reqs["karpenter.k8s.aws/instance-generation"].gt == 2
    assert spec.taints == (Taint("dedicated", "a", "NoSchedule"),)
    assert spec.startup_taints == (Taint("init", "", "NoExecute"),)
    assert spec.limits == {"cpu": 100_000, "memory": 400 * 2**30}
    assert spec.kubelet is not None and spec.kubelet.max_pods == 30 and spec.kubelet.system_reserved == {"cpu": 100}


def test_empty_kubelet_configuration_is_none() -> None:
    doc = {"kind": "Provisioner", "apiVersion": "karpenter.sh/v1alpha5", "metadata": {"name": "p"},
           "spec": {"kubeletConfiguration": {}}}  # fmt: skip
    assert provisioner_spec(load_provisioner(doc)).kubelet is None


def test_weight_order_then_name() -> None:
    ordered = by_weight([make_provisioner("b"), make_provisioner("a"), make_provisioner("z", weight=10)])
    assert [p.name for p in ordered] == ["z", "a", "b"]
