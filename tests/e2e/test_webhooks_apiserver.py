"""kubectl -> real kube-apiserver -> karpy's admission webhooks over TLS -> stored object.

What a user sees: an empty Provisioner comes back with the five default requirements, the seed
reference example is refused with karpy's message naming both conflicting fields, and every
other complete Provisioner in the seed documents is stored, defaulted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from localcluster import VALIDATING_NAME
from tests.e2e.env import Kube, WebhookServer
from tests.support.seeds import is_reference_example, provisioner_documents

pytestmark = pytest.mark.e2e

DEFAULT_REQUIREMENTS = [
    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]},
]
INSTANCE_TYPE_KEYS = {
    "node.kubernetes.io/instance-type",
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-category",
    "karpenter.k8s.aws/instance-generation",
}
SEEDS = provisioner_documents()
REFERENCE = [doc for _, doc in SEEDS if is_reference_example(doc)]
COMPLETE = [(label, doc) for label, doc in SEEDS if not is_reference_example(doc)]


@pytest.fixture
def kubectl(kube: Kube, webhook_server: WebhookServer) -> Iterator[Kube]:
    """The kubectl helper with karpy's webhooks registered; removes test Provisioners afterwards."""
    yield kube
    kube.run("delete", "provisioners", "--all", "--wait=true")
    kube.run("delete", "awsnodetemplates", "--all", "--wait=true")


def provisioner(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": name}, "spec": spec}


def expected_defaults(requirements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Seed 004 / spec section 2: defaults for keys the Provisioner does not constrain, in order."""
    keys = {r["key"] for r in requirements}
    added = [r for r in DEFAULT_REQUIREMENTS[:3] if r["key"] not in keys]
    if not keys & INSTANCE_TYPE_KEYS:
        added += DEFAULT_REQUIREMENTS[3:]
    return added


def test_an_empty_provisioner_is_stored_with_the_five_default_requirements(kubectl: Kube) -> None:
    applied = kubectl.apply(
        "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: default\nspec: {}\n"
    )
    assert applied.returncode == 0, applied.stderr
    shown = kubectl.run("get", "provisioner", "default", "-o", "yaml", check=True).stdout
    assert yaml.safe_load(shown)["spec"]["requirements"] == DEFAULT_REQUIREMENTS


def test_reapplying_and_updating_keeps_the_defaults_once(kubectl: Kube) -> None:
    for spec in ({}, {}, {"ttlSecondsAfterEmpty": 30}):
        applied = kubectl.apply(provisioner("default", spec))
        assert applied.returncode == 0, applied.stderr
    stored = kubectl.get("provisioner", "default")["spec"]
    assert stored["requirements"] == DEFAULT_REQUIREMENTS
    assert stored["ttlSecondsAfterEmpty"] == 30


def test_an_update_that_adds_consolidation_to_ttl_after_empty_is_rejected(kubectl: Kube) -> None:
    assert kubectl.apply(provisioner("default", {"ttlSecondsAfterEmpty": 30})).returncode == 0
    updated = kubectl.apply(provisioner("default", {"ttlSecondsAfterEmpty": 30, "consolidation": {"enabled": True}}))
    assert updated.returncode != 0
    assert f'admission webhook "{VALIDATING_NAME}" denied the request' in updated.stderr
    assert "consolidation" not in kubectl.get("provisioner", "default")["spec"]


def test_the_seed_reference_example_is_rejected_naming_both_fields(kubectl: Kube) -> None:
    assert len(REFERENCE) == 1, "seed 004's full reference example was not found"
    rejected = kubectl.apply(REFERENCE[0])
    assert rejected.returncode != 0
    assert f'admission webhook "{VALIDATING_NAME}" denied the request' in rejected.stderr
    assert "spec.consolidation" in rejected.stderr
    assert "spec.ttlSecondsAfterEmpty" in rejected.stderr
    name = REFERENCE[0]["metadata"]["name"]
    assert "NotFound" in kubectl.run("get", "provisioner", name).stderr


@pytest.mark.parametrize(("label", "doc"), COMPLETE, ids=[label for label, _ in COMPLETE])
def test_every_complete_seed_provisioner_applies_and_is_stored_defaulted(
    kubectl: Kube, label: str, doc: dict[str, Any]
) -> None:
    applied = kubectl.apply(doc)
    assert applied.returncode == 0, f"{label}: {applied.stderr}"
    stored = kubectl.get("provisioner", doc["metadata"]["name"])["spec"]
    original = doc.get("spec") or {}
    given = original.get("requirements") or []
    assert stored["requirements"] == given + expected_defaults(given)
    assert {k: v for k, v in stored.items() if k != "requirements"} == {
        k: v for k, v in original.items() if k != "requirements"
    }


def test_the_seed_documents_hold_provisioners_to_check() -> None:
    assert len(COMPLETE) >= 3, [label for label, _ in SEEDS]


def test_an_awsnodetemplate_is_admitted_and_one_without_subnet_selector_is_refused(kubectl: Kube) -> None:
    template: dict[str, Any] = {
        "apiVersion": "karpenter.k8s.aws/v1alpha1",
        "kind": "AWSNodeTemplate",
        "metadata": {"name": "default"},
        "spec": {
            "subnetSelector": {"karpenter.sh/discovery": "demo"},
            "securityGroupSelector": {"karpenter.sh/discovery": "demo"},
        },
    }
    applied = kubectl.apply(template)
    assert applied.returncode == 0, applied.stderr
    assert kubectl.get("awsnodetemplate", "default")["spec"] == template["spec"]

    del template["spec"]["subnetSelector"]
    template["metadata"]["name"] = "no-subnets"
    refused = kubectl.apply(template)
    assert refused.returncode != 0
    assert "admission webhook" in refused.stderr and "subnetSelector" in refused.stderr
