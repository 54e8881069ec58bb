"""The admission endpoints: reviews in, reviews out, clear errors, never HTTP 500."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from flask.testing import FlaskClient

from webapp import create_app

PROVISIONER_KIND = {"group": "karpenter.sh", "version": "v1alpha5", "kind": "Provisioner"}
TEMPLATE_KIND = {"group": "karpenter.k8s.aws", "version": "v1alpha1", "kind": "AWSNodeTemplate"}


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()


def make_review(
    obj: Any, operation: str = "CREATE", kind: dict[str, str] | None = None, version: str = "admission.k8s.io/v1"
) -> dict[str, Any]:
    return {
        "apiVersion": version,
        "kind": "AdmissionReview",
        "request": {
            "uid": "0df28fbd-5f5f-11e8-bc74-36e6bb280816",
            "operation": operation,
            "kind": kind or PROVISIONER_KIND,
            "object": obj,
        },
    }


def provisioner(spec: dict[str, Any] | None = None, name: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1alpha5",
        "kind": "Provisioner",
        "metadata": {"name": name},
        "spec": spec or {},
    }


def post(client: FlaskClient, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    resp = client.post(path, data=data, content_type="application/json")
    return resp.status_code, resp.get_json()


def test_mutate_adds_the_five_defaults_as_a_jsonpatch(client: FlaskClient) -> None:
    status, body = post(client, "/webhooks/mutate", make_review(provisioner()))
    assert status == 200
    response = body["response"]
    assert response["allowed"] is True and response["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(response["patch"]))
    assert ops == [
        {
            "op": "add",
            "path": "/spec/requirements",
            "value": [
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
                {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]},
            ],
        }
    ]


def test_mutate_appends_to_existing_requirements(client: FlaskClient) -> None:
    obj = provisioner({"requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]})
    _, body = post(client, "/webhooks/mutate", make_review(obj))
    ops = json.loads(base64.b64decode(body["response"]["patch"]))
    assert [op["path"] for op in ops] == ["/spec/requirements/-"] * 4
    assert "kubernetes.io/arch" not in [op["value"]["key"] for op in ops]


def test_object_needing_nothing_gets_no_patch(client: FlaskClient) -> None:
    obj = provisioner(
        {
            "requirements": [
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                {"key": "kubernetes.io/arch", "operator": "Exists"},
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
            ]
        }
    )
    _, body = post(client, "/webhooks/mutate", make_review(obj))
    assert body["response"] == {"allowed": True, "uid": "0df28fbd-5f5f-11e8-bc74-36e6bb280816"}


def test_validate_denies_with_every_field_named(client: FlaskClient) -> None:
    obj = provisioner(
        {
            "ttlSecondsAfterEmpty": 30,
            "consolidation": {"enabled": True},
            "requirements": [
                {"key": "a", "operator": "In", "values": []},
                {"key": "b", "operator": "Sometimes"},
                {"key": "c", "operator": "Exists"},
            ],
        }
    )
    status, body = post(client, "/webhooks/validate", make_review(obj))
    assert status == 200
    response = body["response"]
    assert response["allowed"] is False and response["status"]["code"] == 400
    message = response["status"]["message"]
    for path in (
        "spec.ttlSecondsAfterEmpty",
        "spec.consolidation.enabled",
        "spec.requirements[0].values",
        "spec.requirements[1].operator",
    ):
        assert path in message
    assert "Provisioner 'default'" in message


def test_validate_accepts_a_valid_provisioner(client: FlaskClient) -> None:
    _, body = post(client, "/webhooks/validate", make_review(provisioner({"ttlSecondsAfterEmpty": 30})))
    assert body["response"]["allowed"] is True


def test_validate_awsnodetemplate(client: FlaskClient) -> None:
    good = {
        "apiVersion": "karpenter.k8s.aws/v1alpha1",
        "kind": "AWSNodeTemplate",
        "metadata": {"name": "default"},
        "spec": {"subnetSelector": {"karpenter.sh/discovery": "x"}, "securityGroupSelector": {"a": "b"}},
    }
    _, body = post(client, "/webhooks/validate", make_review(good, kind=TEMPLATE_KIND))
    assert body["response"]["allowed"] is True
    bad = {**good, "spec": {"securityGroupSelector": {"a": "b"}, "amiFamily": "Windows"}}
    _, body = post(client, "/webhooks/validate", make_review(bad, kind=TEMPLATE_KIND))
    assert body["response"]["allowed"] is False
    assert "spec.subnetSelector" in body["response"]["status"]["message"]
    assert "spec.amiFamily" in body["response"]["status"]["message"]
    _, body = post(client, "/webhooks/mutate", make_review(good, kind=TEMPLATE_KIND))
    assert body["response"] == {"allowed": True, "uid": "0df28fbd-5f5f-11e8-bc74-36e6bb280816"}


@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
def test_delete_and_connect_are_allowed_as_they_are(client: FlaskClient, operation: str) -> None:
    for path in ("/webhooks/mutate", "/webhooks/validate"):
        _, body = post(client, path, make_review({"junk": True}, operation=operation))
        assert body["response"]["allowed"] is True and "patch" not in body["response"]


def test_update_is_validated(client: FlaskClient) -> None:
    _, body = post(client, "/webhooks/validate", make_review(provisioner({"weight": 500}), operation="UPDATE"))
    assert body["response"]["allowed"] is False and "spec.weight" in body["response"]["status"]["message"]


def test_v1beta1_review_is_answered_in_v1beta1(client: FlaskClient) -> None:
    _, body = post(client, "/webhooks/mutate", make_review(provisioner(), version="admission.k8s.io/v1beta1"))
    assert body["apiVersion"] == "admission.k8s.io/v1beta1" and body["kind"] == "AdmissionReview"
    assert body["response"]["uid"] == "0df28fbd-5f5f-11e8-bc74-36e6bb280816"


@pytest.mark.parametrize("obj", [None, "a string", [1, 2], {"metadata": "x"}, {"metadata": {"name": "a"}, "spec": []}])
def test_unreadable_object_is_denied_not_crashed(client: FlaskClient, obj: Any) -> None:
    for path in ("/webhooks/mutate", "/webhooks/validate"):
        status, body = post(client, path, make_review(obj))
        assert status == 200
        assert body["response"]["allowed"] is False and body["response"]["status"]["code"] == 400


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b"{}",
        b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}',
        b'{"apiVersion":"v1","kind":"AdmissionReview","request":{"uid":"a"}}',
        b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":5}}',
        b"\xff\xfe\x00garbage",
        b"[" * 100_000,
    ],
)
def test_body_that_is_not_a_review_gets_400_json(client: FlaskClient, body: bytes) -> None:
    status, answer = post(client, "/webhooks/validate", body)
    assert status == 400 and "error" in answer


def test_body_over_3mib_gets_413(client: FlaskClient) -> None:
    status, answer = post(client, "/webhooks/mutate", b" " * (3 * 1024 * 1024 + 1))
    assert status == 413 and "error" in answer


def test_wrong_method_and_path_answer_json(client: FlaskClient) -> None:
    assert client.get("/webhooks/mutate").status_code == 405
    assert client.get("/nowhere").status_code == 404
    assert client.get("/healthz").get_json() == {"status": "ok"}
    assert client.get("/readyz").status_code == 200


def test_a_chunked_body_over_the_limit_is_refused_not_cut(client: FlaskClient) -> None:
    # issue 14, item 6: without a Content-Length the body was silently cut at 3 MiB (then "not JSON")
    import io

    body = json.dumps(make_review(provisioner({"labels": {"x": "a" * (4 * 1024 * 1024)}}))).encode()
    resp = client.post(
        "/webhooks/validate",
        input_stream=io.BytesIO(body),
        headers={"Transfer-Encoding": "chunked", "Content-Type": "application/json"},
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert resp.status_code == 413 and "error" in resp.get_json()
    small = json.dumps(make_review(provisioner())).encode()
    resp = client.post(
        "/webhooks/validate",
        input_stream=io.BytesIO(small),
        headers={"Transfer-Encoding": "chunked", "Content-Type": "application/json"},
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert resp.status_code == 200 and resp.get_json()["response"]["allowed"] is True
