"""kubectl -> real kube-apiserver -> karpy's pod webhook, only for pods that may need the gate.

The pod webhook (`topology-gate.webhook.karpy.sh`) carries a CEL `matchConditions` entry, so the
apiserver calls it only for pods with a `DoNotSchedule` spread on a key other than the hostname
(`controller/apis/podgate.py`'s `spread_keys`): every other pod is created without a webhook
call, and such a pod still comes back gated. Whether the webhook was called is read from the
apiserver's own counters (`apiserver_admission_webhook_request_total` per webhook name, and
`apiserver_admission_match_condition_exclusions_total` for the pods the condition left out).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from controller.apis.podgate import spread_keys
from localcluster.manifests import POD_GATE_NAME
from tests.e2e.env import Kube, WebhookServer
from tests.support.poll import until

pytestmark = pytest.mark.e2e

GATE = "karpy.sh/topology-spread"
ZONE, HOST, RACK = "topology.kubernetes.io/zone", "kubernetes.io/hostname", "example.com/rack"
CALLS = "apiserver_admission_webhook_request_total"
EXCLUDED = "apiserver_admission_match_condition_exclusions_total"


def _spread(key: str, when: str = "DoNotSchedule") -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": {"matchLabels": {"a": "b"}}}


# name -> (the pod's spread constraints, whether the webhook is called and gates it)
PODS: dict[str, tuple[list[dict[str, Any]], bool]] = {
    "no-spread": ([], False),
    "hostname-spread": ([_spread(HOST)], False),
    "zonal-schedule-anyway": ([_spread(ZONE, "ScheduleAnyway")], False),
    "zonal-spread": ([_spread(ZONE)], True),
    "hostname-and-zonal": ([_spread(HOST), _spread(ZONE)], True),
    "custom-key-spread": ([_spread(RACK)], True),
}


def _counter(kube: Kube, metric: str) -> float:
    """The sum of `metric` over every series of karpy's pod webhook, from the apiserver's /metrics."""
    text = kube.run("get", "--raw", "/metrics", check=True).stdout
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(metric + "{") and f'name="{POD_GATE_NAME}"' in line
    )


@pytest.fixture
def namespace(kube: Kube, webhook_server: WebhookServer) -> Iterator[str]:
    name = f"podgate-{uuid.uuid4().hex[:8]}"
    kube.run("create", "namespace", name, check=True)
    yield name
    kube.delete("namespace", name)


def _pod(namespace: str, name: str, constraints: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    if constraints:
        spec["topologySpreadConstraints"] = constraints
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": {"a": "b"}},
            "spec": spec}  # fmt: skip


@pytest.mark.parametrize("name", list(PODS))
def test_only_pods_with_a_non_hostname_do_not_schedule_spread_call_the_pod_webhook(
    kube: Kube, namespace: str, name: str
) -> None:
    constraints, called = PODS[name]
    pod = _pod(namespace, name, constraints)
    assert bool(spread_keys(pod["spec"])) is called  # the CEL condition and the webhook's own rule agree
    calls, excluded = _counter(kube, CALLS), _counter(kube, EXCLUDED)

    kube.run("create", "-f", "-", input=json.dumps(pod), check=True)

    gates = [g["name"] for g in kube.get("pod", name, "-n", namespace)["spec"].get("schedulingGates") or []]
    if called:
        assert gates == [GATE]
        until(lambda: _counter(kube, CALLS) >= calls + 1, 10, f"{POD_GATE_NAME} called for {name}")
    else:
        assert gates == []
        until(lambda: _counter(kube, EXCLUDED) >= excluded + 1, 10, f"{name} left out by the match condition")
        assert _counter(kube, CALLS) == calls  # created without the webhook being called
