"""`review()` limits: depth of documents, size of the error text (issue 14, items 1 and 2)."""

from __future__ import annotations

import json
from typing import Any

from controller.apis.admission import review
from controller.apis.limits import MAX_DEPTH, too_deep

PROVISIONER_KIND = {"group": "karpenter.sh", "version": "v1alpha5", "kind": "Provisioner"}


def nested(depth: int) -> dict[str, Any]:
    doc: dict[str, Any] = {"leaf": True}
    for _ in range(depth - 1):
        doc = {"x": doc}
    return doc


def body(obj: Any, operation: str = "CREATE") -> bytes:
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {"uid": "u-1", "operation": operation, "kind": PROVISIONER_KIND, "object": obj},
        }
    ).encode()


def provisioner(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": "p"}, "spec": spec}


def answer(obj: Any, mutate: bool, operation: str = "CREATE") -> dict[str, Any]:
    status, doc = review(body(obj, operation), mutate=mutate)
    assert status == 200
    return doc["response"]  # type: ignore[no-any-return]


def test_a_document_nested_deeper_than_the_limit_is_denied_by_both_webhooks() -> None:
    deep = provisioner(provider={"subnetSelector": {"a": "b"}, "unknown": nested(600)})
    for mutate in (True, False):
        response = answer(deep, mutate)
        assert response["allowed"] is False
        assert response["status"]["code"] == 400
        assert f"nested deeper than {MAX_DEPTH} levels" in response["status"]["message"]
        assert "spec.provider.unknown.x.x" in response["status"]["message"]


def test_the_depth_limit_counts_containers_from_the_root() -> None:
    at_limit = provisioner(unknown=nested(MAX_DEPTH - 2))  # root, spec, then MAX_DEPTH - 2 levels
    assert too_deep(at_limit) is None
    assert too_deep(provisioner(unknown=nested(MAX_DEPTH - 1))) == "spec" + ".unknown" + ".x" * (MAX_DEPTH - 2)
    assert too_deep([[[1]]], max_depth=2) == "[0][0]"
    assert too_deep({"a": [{"b": {}}]}, max_depth=3) == "a[0].b"


def test_a_long_path_is_cut_in_the_message() -> None:
    doc: dict[str, Any] = {}
    for _ in range(5000):
        doc = {"k" * 40: doc}
    path = too_deep(doc)
    assert path is not None and len(path) < 200 and path.endswith("…")
