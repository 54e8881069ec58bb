"""Which new pods karpy's pod webhook gates (`controller/apis/podgate.py`), and the webhook's
answer for pods (`controller/apis/admission.py`)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from controller.apis.admission import review
from controller.apis.podgate import gate_patch, needs_gate, spread_keys
from controller.core.labels import TOPOLOGY_GATE

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def constraint(key: str = ZONE, when: str = "DoNotSchedule") -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": {"matchLabels": {"a": "b"}}}


def pod(*constraints: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "x"}], "topologySpreadConstraints": list(constraints),
                     **spec}}  # fmt: skip


@pytest.mark.parametrize(
    ("obj", "gated"),
    [
        (pod(constraint()), True),
        (pod(constraint("example.com/rack")), True),
        (pod(constraint(HOST), constraint(ZONE, "ScheduleAnyway")), False),
        (pod(), False),
        (pod(constraint(), nodeName="n1"), False),
        (pod(constraint(), schedulerName="other"), False),
        (pod(constraint(), schedulingGates=[{"name": TOPOLOGY_GATE}]), False),
        ({**pod(constraint()), "metadata": {"ownerReferences": [{"kind": "DaemonSet", "name": "d"}]}}, False),
        ({"kind": "Pod", "spec": "nonsense"}, False),
        (pod({**constraint(), "minDomains": 3}), False),
        (pod({**constraint(), "minDomains": 1}), True),
        (pod(constraint(), {**constraint(HOST), "minDomains": 3}), True),
    ],
    ids=["zone", "custom-key", "hostname-and-anyway", "none", "bound", "other-scheduler", "already", "daemonset",
         "unreadable", "min-domains", "min-domains-1", "hostname-min-domains"],
)  # fmt: skip
def test_which_pods_are_gated(obj: dict[str, Any], gated: bool) -> None:
    assert needs_gate(obj) is gated


def test_the_patch_adds_the_gate_next_to_the_pods_own_gates() -> None:
    assert gate_patch(pod(constraint())) == [
        {"op": "add", "path": "/spec/schedulingGates", "value": [{"name": TOPOLOGY_GATE}]}
    ]
    assert gate_patch(pod(constraint(), schedulingGates=[{"name": "other"}])) == [
        {"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": TOPOLOGY_GATE}}
    ]
    assert spread_keys(pod(constraint(), constraint())["spec"]) == (ZONE,)


def review_pod(obj: Any, mutate: bool = True, operation: str = "CREATE") -> dict[str, Any]:
    doc = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
           "request": {"uid": "u", "operation": operation, "kind": {"group": "", "version": "v1", "kind": "Pod"},
                       "object": obj}}  # fmt: skip
    status, answer = review(json.dumps(doc).encode(), mutate=mutate)
    assert status == 200
    response: dict[str, Any] = answer["response"]
    assert response["allowed"] is True and response["uid"] == "u"
    return response


def test_the_webhook_gates_a_zonal_spread_pod_on_creation_only_and_never_denies_a_pod() -> None:
    response = review_pod(pod(constraint()))
    assert response["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(response["patch"])) == gate_patch(pod(constraint()))
    assert "patch" not in review_pod(pod(constraint()), operation="UPDATE")
    assert "patch" not in review_pod(pod(constraint()), mutate=False)
    assert "patch" not in review_pod(pod())
    assert "patch" not in review_pod("not a pod")
