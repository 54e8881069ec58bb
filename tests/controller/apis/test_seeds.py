"""Every Provisioner document in the seeds goes through mutate then validate as Karpenter's would."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from controller.apis.admission import review
from tests.support.seeds import is_reference_example, provisioner_documents

OS = {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}
ARCH = {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
ON_DEMAND = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
CATEGORY = {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]}
GENERATION = {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]}

# What seed 004 says each example gets: the defaults for every key it leaves open.
EXPECTED_ADDED = {
    "default-limits": [OS, ARCH, CATEGORY, GENERATION],  # requires capacity-type spot only
    "gpu": [OS, ARCH, ON_DEMAND],  # instance-type requirement suppresses the category default
    "cilium-startup": [OS, ARCH, ON_DEMAND, CATEGORY, GENERATION],
}


def _review(obj: dict[str, Any], mutate: bool) -> dict[str, Any]:
    body = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "seed",
            "operation": "CREATE",
            "kind": {"group": "karpenter.sh", "version": "v1alpha5", "kind": "Provisioner"},
            "object": obj,
        },
    }
    status, answer = review(json.dumps(body).encode(), mutate=mutate)
    assert status == 200
    response: dict[str, Any] = answer["response"]
    return response


def _apply_patch(obj: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(obj))
    if "patch" not in response:
        return out
    for op in json.loads(base64.b64decode(response["patch"])):
        assert op["op"] == "add"
        if op["path"] == "/spec":
            out["spec"] = op["value"]
        elif op["path"] == "/spec/requirements":
            out["spec"]["requirements"] = op["value"]
        else:
            assert op["path"] == "/spec/requirements/-"
            out["spec"]["requirements"].append(op["value"])
    return out


def _label(doc: dict[str, Any]) -> str:
    name = str(doc["metadata"]["name"])
    return "default-limits" if name == "default" and "limits" in doc["spec"] else name


SEEDS = provisioner_documents()


def test_seeds_hold_the_four_provisioner_examples() -> None:
    assert len(SEEDS) == 4
    assert sum(is_reference_example(doc) for _, doc in SEEDS) == 1


@pytest.mark.parametrize(("label", "doc"), SEEDS, ids=[label for label, _ in SEEDS])
def test_seed_provisioner_mutate_then_validate(label: str, doc: dict[str, Any]) -> None:
    mutated = _review(doc, mutate=True)
    assert mutated["allowed"] is True
    defaulted = _apply_patch(doc, mutated)
    validated = _review(defaulted, mutate=False)
    if is_reference_example(doc):
        assert validated["allowed"] is False
        message = validated["status"]["message"]
        assert "spec.ttlSecondsAfterEmpty" in message
        assert "spec.consolidation.enabled" in message
        assert validated["status"]["code"] == 400
        return
    assert validated["allowed"] is True, validated.get("status")
    original = doc["spec"].get("requirements", [])
    assert defaulted["spec"]["requirements"][: len(original)] == original
    assert defaulted["spec"]["requirements"][len(original) :] == EXPECTED_ADDED[_label(doc)]
    # defaulting is idempotent: the defaulted object needs no further patch
    assert "patch" not in _review(defaulted, mutate=True)
