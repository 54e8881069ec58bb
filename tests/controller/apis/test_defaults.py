"""Defaulting of Provisioners (spec §2 and the decisions table)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.apis.defaults import default_provisioner, default_requirements


def keys_added(spec: dict[str, Any]) -> list[str]:
    return [r["key"] for r in default_requirements(spec)]


ALL = [
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "karpenter.sh/capacity-type",
    "karpenter.k8s.aws/instance-category",
    "karpenter.k8s.aws/instance-generation",
]

CASES = {
    "empty spec gets all five, in order": ({}, ALL),
    "os requirement of any operator suppresses os": (
        {"requirements": [{"key": "kubernetes.io/os", "operator": "Exists"}]},
        ALL[1:],
    ),
    "beta arch alias counts as arch": (
        {"requirements": [{"key": "beta.kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]},
        [ALL[0], *ALL[2:]],
    ),
    "capacity type NotIn counts": (
        {"requirements": [{"key": "karpenter.sh/capacity-type", "operator": "NotIn", "values": ["spot"]}]},
        [ALL[0], ALL[1], *ALL[3:]],
    ),
    "instance family suppresses category and generation": (
        {"requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}]},
        ALL[:3],
    ),
    "instance type suppresses category and generation": (
        {"requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}]},
        ALL[:3],
    ),
    "generation alone suppresses both instance defaults": (
        {"requirements": [{"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["5"]}]},
        ALL[:3],
    ),
    "instance size does not suppress the instance defaults": (
        {"requirements": [{"key": "karpenter.k8s.aws/instance-size", "operator": "In", "values": ["large"]}]},
        ALL,
    ),
    "a well-known label counts as a requirement (karpy decision)": (
        {"labels": {"kubernetes.io/arch": "arm64"}},
        [ALL[0], *ALL[2:]],
    ),
    "a custom label does not": ({"labels": {"team": "a"}}, ALL),
}


@pytest.mark.parametrize(("spec", "expected"), CASES.values(), ids=CASES.keys())
def test_default_requirements(spec: dict[str, Any], expected: list[str]) -> None:
    assert keys_added(spec) == expected


def test_default_values() -> None:
    added = {r["key"]: (r["operator"], r["values"]) for r in default_requirements({})}
    assert added == {
        "kubernetes.io/os": ("In", ["linux"]),
        "kubernetes.io/arch": ("In", ["amd64"]),
        "karpenter.sh/capacity-type": ("In", ["on-demand"]),
        "karpenter.k8s.aws/instance-category": ("In", ["c", "m", "r"]),
        "karpenter.k8s.aws/instance-generation": ("Gt", ["2"]),
    }


def test_defaulting_is_idempotent_and_does_not_change_its_argument() -> None:
    doc: dict[str, Any] = {"metadata": {"name": "a"}, "spec": {"requirements": [{"key": "x", "operator": "Exists"}]}}
    once = default_provisioner(doc)
    assert doc["spec"]["requirements"] == [{"key": "x", "operator": "Exists"}]
    assert default_provisioner(once) == once
    assert len(once["spec"]["requirements"]) == 6


def test_missing_spec_is_created() -> None:
    assert len(default_provisioner({"metadata": {"name": "a"}})["spec"]["requirements"]) == 5
