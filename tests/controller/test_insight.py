"""The controller's answers to the dashboard, over its HTTP server: node prices and outlooks, and
why each pending pod is pending (the provisioning controller's last word about it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
import requests

from controller.clock import FakeClock
from controller.core import labels as L
from controller.decisions import IGNORED, UNSCHEDULABLE, Decision, DecisionLog
from controller.deprovisioning.outlook import KEPT, Outlook
from controller.httpserver import ControllerHTTPServer
from controller.insight import Insight
from tests.builders.deprovisioning import instance_type
from tests.builders.wire import make_node, make_pod
from tests.fakes.cloudprovider import FakeCloudProvider
from tests.fakes.world import state_of


@pytest.fixture
def served() -> Iterator[tuple[str, DecisionLog, FakeClock]]:
    clock = FakeClock()
    objects = {
        "nodes": [make_node("n1", instance_type="small", labels={L.ZONE: "zone-a"}), make_node("x", provisioner=None)],
        "pods": [make_pod("a"), make_pod("b")],
    }
    state = state_of(objects, clock)
    cloud = FakeCloudProvider([instance_type("small", 2, price=0.1, spot_price=0.03)], clock)
    decisions = DecisionLog(clock)
    insight = Insight(state, cloud, decisions, clock, lambda: {"n1": Outlook(KEPT, "not consolidated: reasons")})
    answers = {"/api/v1/nodes": insight.nodes, "/api/v1/pods/pending": insight.pending}
    srv = ControllerHTTPServer("127.0.0.1", 0, decisions, lambda: {"synced": True}, answers)
    srv.start()
    try:
        yield f"http://127.0.0.1:{srv.port}", decisions, clock
    finally:
        srv.stop()


def test_owned_nodes_with_price_and_outlook(served: tuple[str, DecisionLog, FakeClock]) -> None:
    url, _, _ = served
    body = requests.get(f"{url}/api/v1/nodes", timeout=5).json()
    assert body["synced"] is True
    assert body["nodes"] == {
        "n1": {
            "pricePerHour": 0.1,
            "inFlight": False,
            "outlook": {"verdict": "kept", "reason": "not consolidated: reasons"},
        }
    }


def test_pending_pods_get_their_last_evaluation_kept_past_the_ring(served: tuple[str, DecisionLog, FakeClock]) -> None:
    url, decisions, clock = served
    clause = {"provisioners": ["default"], "stages": ["instance-types"], "text": "no instance type has 64 cpu"}
    said = Decision(
        "provisioning", UNSCHEDULABLE, "pod/default/a", "no instance type has 64 cpu", extra={"clauses": [clause]}
    )
    decisions.evaluated(said)
    clock.step(10)
    decisions.evaluated(dataclasses.replace(said, time=0.0))  # the next pass says the same
    assert [d.subject for d in decisions.recent()].count("pod/default/a") == 1  # the ring got it once
    decisions.record_once(Decision("provisioning", IGNORED, "pod/default/b", "pod uses a PVC"))
    for i in range(1100):  # the ring forgets; the latest answer per pod stays
        decisions.record(Decision("provisioning", "launched", f"node/n{i}"))
    pods = requests.get(f"{url}/api/v1/pods/pending", timeout=5).json()["pods"]
    assert pods["default/a"]["reason"] == "no instance type has 64 cpu"
    assert pods["default/a"]["time"] == "2023-11-14T22:13:30Z"  # evaluated again in the second pass
    assert pods["default/a"]["since"] == "2023-11-14T22:13:20Z"  # saying the same since the first
    assert pods["default/a"]["clauses"] == [clause]  # the reason as values, for readers such as the dashboard
    assert pods["default/b"] == {
        "action": "ignored",
        "reason": "pod uses a PVC",
        "time": "2023-11-14T22:13:30Z",
        "since": "2023-11-14T22:13:30Z",
        "clauses": [],
    }


def test_the_answers_are_read_only(served: tuple[str, DecisionLog, FakeClock]) -> None:
    url, _, _ = served
    for path in ("/api/v1/nodes", "/api/v1/pods/pending"):
        assert requests.post(f"{url}{path}", timeout=5).status_code == 405
