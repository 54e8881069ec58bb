"""End to end: pending pods get nodes shaped by their Provisioner, within limits (issue 5)."""

from __future__ import annotations

import time

import pytest

from controller.core import labels as L
from controller.core.resources import parse_resources
from controller.kube.resources import PROVISIONERS
from tests.e2e.env import KarpyEnv
from tests.support.poll import until

pytestmark = pytest.mark.e2e

STARTUP_TAINT = {"key": "example.com/agent-not-ready", "effect": "NoSchedule"}
TAINT = {"key": "example.com/team", "value": "a", "effect": "NoSchedule"}
TOLERATION = {"key": "example.com/team", "operator": "Exists"}


def test_thirty_pods_that_fit_nowhere_run_within_15s_on_nodes_shaped_by_the_provisioner(karpy: KarpyEnv) -> None:
    karpy.provisioner(labels={"team": "a"}, taints=[TAINT], startupTaints=[STARTUP_TAINT])
    karpy.start()
    created = time.monotonic()
    # tolerating the startup taint too, the pods are bound by karpy at once (test_placement.py
    # covers pods that wait for a startup taint's removal)
    tolerations = [TOLERATION, {"key": STARTUP_TAINT["key"], "operator": "Exists"}]
    karpy.deployment("web", 30, cpu="1", memory="1Gi", tolerations=tolerations)
    until(lambda: len(karpy.running("web")) == 30, 15, "30 pods Running within 15 s of creation")
    elapsed = time.monotonic() - created
    nodes = karpy.nodes()
    assert nodes
    for node in nodes:
        labels = node["metadata"]["labels"]
        assert labels["team"] == "a" and labels[L.PROVISIONER_NAME] == "default"
        for key in (L.INSTANCE_TYPE, L.ZONE, L.CAPACITY_TYPE, L.ARCH, L.OS, L.INSTANCE_FAMILY, L.INSTANCE_CPU):
            assert labels.get(key), key
        taints = {(t["key"], t.get("value", ""), t["effect"]) for t in node["spec"]["taints"]}
        assert {("example.com/team", "a", "NoSchedule"), ("example.com/agent-not-ready", "", "NoSchedule")} <= taints
        assert node["metadata"]["finalizers"] == [L.TERMINATION_FINALIZER]
        assert node["spec"]["providerID"].startswith("simulated:///")
    assert karpy.consistent() == ""

    def counted() -> bool:
        status = karpy.kube.get(PROVISIONERS, "default").get("status", {}).get("resources", {})
        want = sum(parse_resources(n["status"]["capacity"])["cpu"] for n in karpy.nodes())
        return parse_resources(status).get("cpu") == want

    until(counted, 10, "status.resources to count the nodes' capacity")

    def columns(name: str) -> dict[str, str]:
        """`kubectl get provisioners NAME` as header → value (columns are aligned: a value starts
        where its header does)."""
        head, row = karpy.cluster.kubectl("get", "provisioners", name).stdout.splitlines()[:2]
        return {h: row[head.index(h) :].split()[0] for h in ("READY", "NODES")}

    shown = columns("default")  # NAME READY CAPACITY TYPES ... as `kubectl get provisioners` prints them
    assert shown["READY"] == "True" and shown["NODES"] == str(len(karpy.nodes())), shown
    karpy.provisioner("broken", providerRef={"name": "nowhere"})
    until(lambda: columns("broken").get("READY") == "False", 10, "the Provisioner with a missing template not Ready")
    (ready,) = karpy.kube.get(PROVISIONERS, "broken")["status"]["conditions"]
    assert ready["reason"] == "NodeTemplateNotFound" and "'nowhere'" in ready["message"]
    print(f"30 pods Running {elapsed:.1f}s after creation on {len(nodes)} node(s)")


def test_limits_are_never_exceeded_and_the_rest_stay_pending_with_a_reason(karpy: KarpyEnv) -> None:
    karpy.provisioner(limits={"resources": {"cpu": "10"}})
    karpy.start()
    karpy.deployment("big", 30, cpu="1", memory="512Mi")
    until(lambda: karpy.running("big"), 20, "some pods Running")
    karpy.passes("provisioning", 15)  # give it every chance to overshoot
    total = sum(parse_resources(n["status"]["capacity"])["cpu"] for n in karpy.nodes())
    assert 0 < total <= 10_000
    pending = [p for p in karpy.pods("big") if not p["spec"].get("nodeName")]
    assert pending
    reasons = until(
        lambda: [e for e in karpy.events("FailedScheduling") if e.get("source", {}).get("component") == "karpy"],
        15,
        "a karpy FailedScheduling event",
    )
    assert any("limit" in e["message"] or "exceed" in e["message"] for e in reasons), reasons[0]["message"]
