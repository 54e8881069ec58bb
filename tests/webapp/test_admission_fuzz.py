"""Generated bodies against both endpoints: never 500; a well-formed review gets its uid back."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webapp import create_app

APP = create_app()
PATHS = ("/webhooks/mutate", "/webhooks/validate")

json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=40,
)
label_key = st.sampled_from(
    [
        "kubernetes.io/arch",
        "karpenter.sh/capacity-type",
        "team",
        "a/b/c",
        "",
        "x" * 70,
        "karpenter.k8s.aws/instance-cpu",
        "kubernetes.io/hostname",
        "beta.kubernetes.io/os",
    ]
)
requirement = st.fixed_dictionaries(
    {
        "key": label_key | json_leaf,
        "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Foo"]) | json_leaf,
    },
    optional={"values": st.lists(st.text(max_size=10) | st.integers(), max_size=4) | json_leaf},
)
quantity = st.sampled_from(["100m", "1Gi", "1e3", "0.5", "-1", "abc", "5%", "101%", ""]) | st.integers() | json_leaf
spec = st.fixed_dictionaries(
    {},
    optional={
        "requirements": st.lists(requirement, max_size=4) | json_value,
        "labels": st.dictionaries(label_key, st.text(max_size=10), max_size=3) | json_value,
        "taints": st.lists(
            st.fixed_dictionaries(
                {"key": label_key, "effect": st.sampled_from(["NoSchedule", "NoExecute", "Bad", ""])}
            ),
            max_size=3,
        )
        | json_value,
        "ttlSecondsAfterEmpty": st.integers(-5, 100) | json_leaf,
        "ttlSecondsUntilExpired": st.integers() | json_leaf,
        "consolidation": st.fixed_dictionaries({"enabled": st.booleans() | json_leaf}) | json_leaf,
        "weight": st.integers(-10, 200) | json_leaf,
        "limits": st.fixed_dictionaries({"resources": st.dictionaries(st.sampled_from(["cpu", "memory"]), quantity)}),
        "kubeletConfiguration": st.fixed_dictionaries(
            {},
            optional={
                "maxPods": st.integers(-3, 300) | json_leaf,
                "evictionHard": st.dictionaries(
                    st.sampled_from(["memory.available", "nodefs.available", "bad"]), quantity
                ),
                "evictionSoft": st.dictionaries(st.sampled_from(["memory.available", "pid.available"]), quantity),
                "evictionSoftGracePeriod": st.dictionaries(
                    st.sampled_from(["memory.available", "x"]), st.text(max_size=5)
                ),
                "kubeReserved": st.dictionaries(st.sampled_from(["cpu", "memory", "gpu"]), quantity),
                "imageGCHighThresholdPercent": st.integers(-5, 120) | json_leaf,
                "evictionMaxPodGracePeriod": st.sampled_from(["3m", "x", 30]) | json_leaf,
            },
        )
        | json_value,
        "provider": json_value,
        "providerRef": st.fixed_dictionaries({"name": st.text(max_size=5)}) | json_leaf,
    },
)
provisioner_like = st.fixed_dictionaries(
    {"apiVersion": st.just("karpenter.sh/v1alpha5"), "kind": st.just("Provisioner")},
    optional={
        "metadata": st.fixed_dictionaries({"name": st.text(max_size=12) | json_leaf}) | json_value,
        "spec": spec | json_value,
    },
)
template_like = st.fixed_dictionaries(
    {
        "apiVersion": st.just("karpenter.k8s.aws/v1alpha1"),
        "kind": st.just("AWSNodeTemplate"),
        "metadata": st.fixed_dictionaries({"name": st.text(max_size=12)}),
    },
    optional={
        "spec": st.dictionaries(
            st.sampled_from(
                [
                    "subnetSelector",
                    "securityGroupSelector",
                    "amiFamily",
                    "launchTemplate",
                    "metadataOptions",
                    "blockDeviceMappings",
                    "tags",
                    "amiSelector",
                    "userData",
                ]
            ),
            json_value,
        )
    },
)
kind = (
    st.sampled_from(
        [
            {"group": "karpenter.sh", "version": "v1alpha5", "kind": "Provisioner"},
            {"group": "karpenter.k8s.aws", "version": "v1alpha1", "kind": "AWSNodeTemplate"},
        ]
    )
    | json_value
)
review = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(["admission.k8s.io/v1", "admission.k8s.io/v1beta1"]),
        "kind": st.just("AdmissionReview"),
        "request": st.fixed_dictionaries(
            {
                "uid": st.uuids().map(str),
                "operation": st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT"]) | json_leaf,
                "kind": kind,
                "object": provisioner_like | template_like | json_value,
            },
            optional={"oldObject": json_value, "subResource": st.sampled_from(["status"])},
        ),
    }
)
deep = st.integers(50, 3000).map(lambda n: ("[" * n + "]" * n).encode())
garbage = st.binary(max_size=300) | json_value.map(lambda v: json.dumps(v).encode()) | deep


def _check(path: str, data: bytes) -> tuple[int, Any]:
    resp = APP.test_client().post(path, data=data, content_type="application/json")
    assert resp.status_code != 500 and resp.status_code < 500
    body = resp.get_json()
    assert isinstance(body, dict)
    return resp.status_code, body


@settings(max_examples=700, deadline=None, suppress_health_check=list(HealthCheck))
@given(review=review, path=st.sampled_from(PATHS))
def test_well_formed_reviews_get_a_review_with_their_uid(review: dict[str, Any], path: str) -> None:
    status, body = _check(path, json.dumps(review).encode())
    assert status == 200
    assert body["apiVersion"] == review["apiVersion"] and body["kind"] == "AdmissionReview"
    response = body["response"]
    assert response["uid"] == review["request"]["uid"]
    assert isinstance(response["allowed"], bool)
    if not response["allowed"]:
        assert response["status"]["code"] == 400 and response["status"]["message"]


@settings(max_examples=700, deadline=None, suppress_health_check=list(HealthCheck))
@given(review=review, path=st.sampled_from(PATHS))
def test_provisioner_shaped_objects_never_crash(review: dict[str, Any], path: str) -> None:
    review["request"]["kind"] = {"group": "karpenter.sh", "version": "v1alpha5", "kind": "Provisioner"}
    review["request"]["operation"] = "CREATE"
    review["request"].pop("subResource", None)
    status, body = _check(path, json.dumps(review).encode())
    assert status == 200 and body["response"]["uid"] == review["request"]["uid"]


@settings(max_examples=700, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=garbage, path=st.sampled_from(PATHS))
def test_garbage_bodies_get_a_clear_error(data: bytes, path: str) -> None:
    status, body = _check(path, data)
    assert status in (200, 400)
    if status == 400:
        assert body["error"]
