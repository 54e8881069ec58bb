"""AdmissionReview in, AdmissionReview out: the pure logic behind karpy's webhooks.

Pure. `review(body, mutate=...)` takes the raw request body and returns `(http_status, json)`:
400 with `{"error": ...}` when the body is not an AdmissionReview; otherwise 200 with a review in
the same apiVersion (`admission.k8s.io/v1` or `v1beta1`) carrying the request's uid. Provisioner
and AWSNodeTemplate on CREATE and UPDATE are defaulted (mutate, as a base64 JSONPatch, none
when nothing changes) or validated (validate); anything unreadable or invalid is denied with
`status.code: 400` and a message naming every field at fault; so is a document nested deeper
than `limits.MAX_DEPTH` (before anything walks it recursively). A Pod on CREATE (mutate) gets
karpy's topology scheduling gate when `podgate.needs_gate` says so, and is never denied. DELETE,
CONNECT, the status subresource and other kinds are allowed unchanged.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from controller.apis import awsnodetemplate, provisioner
from controller.apis.awsnodetemplate import validate_awsnodetemplate
from controller.apis.defaults import default_requirements
from controller.apis.errors import FieldError, render
from controller.apis.limits import MAX_DEPTH, too_deep
from controller.apis.load import read
from controller.apis.podgate import gate_patch
from controller.apis.schemas import AWS_NODE_TEMPLATE, PROVISIONER
from controller.apis.validation import validate_provisioner

REVIEW_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
_KINDS = {
    (provisioner.API_VERSION.split("/")[0], provisioner.KIND): "Provisioner",
    (awsnodetemplate.API_VERSION.split("/")[0], awsnodetemplate.KIND): "AWSNodeTemplate",
}


class BadReview(ValueError):
    """The body is not an AdmissionReview (answered with HTTP 400)."""


def _parse(body: bytes) -> tuple[str, dict[str, Any]]:
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError) as err:
        raise BadReview(f"body is not JSON: {str(err)[:200]}") from None
    if not isinstance(doc, dict):
        raise BadReview("body must be a JSON object")
    version = doc.get("apiVersion")
    if version not in REVIEW_VERSIONS:
        raise BadReview(f"apiVersion must be one of {list(REVIEW_VERSIONS)}")
    if doc.get("kind") != "AdmissionReview":
        raise BadReview("kind must be AdmissionReview")
    request = doc.get("request")
    if not isinstance(request, dict):
        raise BadReview("request must be an object")
    if not isinstance(request.get("uid"), str) or not request["uid"]:
        raise BadReview("request.uid must be a non-empty string")
    return str(version), request


def _kind_of(request: dict[str, Any]) -> str | None:
    kind = request.get("kind")
    if isinstance(kind, dict) and isinstance(kind.get("group"), str) and isinstance(kind.get("kind"), str):
        return _KINDS.get((kind["group"], kind["kind"]))
    obj = request.get("object")
    if isinstance(obj, dict) and isinstance(obj.get("apiVersion"), str) and isinstance(obj.get("kind"), str):
        return _KINDS.get((obj["apiVersion"].split("/")[0], obj["kind"]))
    return None


def _patch(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec")
    if spec is None:
        added = default_requirements({})
        return [{"op": "add", "path": "/spec", "value": {"requirements": added}}]
    added = default_requirements(spec)
    if not added:
        return []
    if spec.get("requirements") is None:
        return [{"op": "add", "path": "/spec/requirements", "value": added}]
    return [{"op": "add", "path": "/spec/requirements/-", "value": req} for req in added]


def _is_pod(request: dict[str, Any]) -> bool:
    kind = request.get("kind")
    return isinstance(kind, dict) and kind.get("group") == "" and kind.get("kind") == "Pod"


def _answer(ops: list[dict[str, Any]]) -> dict[str, Any]:
    answer: dict[str, Any] = {"allowed": True}
    if ops:
        answer["patchType"] = "JSONPatch"
        answer["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
    return answer


def _decide(request: dict[str, Any], mutate: bool) -> dict[str, Any]:
    operation = request.get("operation")
    if operation not in ("CREATE", "UPDATE") or request.get("subResource"):
        return {"allowed": True}
    if _is_pod(request):  # pods: only gated on creation (podgate.py), never denied
        obj = request.get("object")
        creating = mutate and operation == "CREATE" and isinstance(obj, dict)
        return _answer(gate_patch(obj) if creating and isinstance(obj, dict) else [])
    kind = _kind_of(request)
    if kind is None:
        return {"allowed": True, "warnings": ["karpy admits only Provisioner and AWSNodeTemplate; left unchanged"]}
    obj = request.get("object")
    is_provisioner = kind == "Provisioner"
    deep = too_deep(obj)
    if deep is not None:
        errors = [FieldError(f"nested deeper than {MAX_DEPTH} levels", (deep,))]
        loaded = None
    else:
        loaded, errors = read(obj, PROVISIONER if is_provisioner else AWS_NODE_TEMPLATE)
    if loaded is not None and not mutate:
        errors = validate_provisioner(loaded) if is_provisioner else validate_awsnodetemplate(loaded)
    if not errors:
        return _answer(_patch(obj) if mutate and is_provisioner and isinstance(obj, dict) else [])
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    subject = f"{kind} {name!r}" if isinstance(name, str) else kind
    return {
        "allowed": False,
        "status": {"code": 400, "reason": "BadRequest", "message": f"{subject} is invalid:\n{render(errors)}"},
    }


def review(body: bytes, mutate: bool) -> tuple[int, dict[str, Any]]:
    """Answer one admission request body: (HTTP status, JSON document)."""
    try:
        version, request = _parse(body)
    except BadReview as err:
        return 400, {"error": str(err)}
    try:
        response = _decide(request, mutate)
    except (RecursionError, ValueError, TypeError, KeyError, AttributeError, ArithmeticError) as err:
        response = {
            "allowed": False,
            "status": {"code": 400, "reason": "BadRequest", "message": f"the object could not be read: {err!s:.200}"},
        }
    response["uid"] = request["uid"]
    return 200, {"apiVersion": version, "kind": "AdmissionReview", "response": response}
