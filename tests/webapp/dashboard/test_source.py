"""The dashboard's source: the controller asked over its real HTTP server, unreachable said
plainly, answers cached, the cluster read from watch-fed state, and a one-hour history."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.clock import FakeClock
from controller.decisions import LAUNCHED, Decision, DecisionLog
from controller.httpserver import ControllerHTTPServer
from localcluster.procs import free_port
from tests.fakes.world import feed
from webapp.dashboard.common import cluster_cost
from webapp.dashboard.reader import ControllerAPI, ControllerError
from webapp.dashboard.source import SAMPLE_SECONDS, DashboardSource, ask_controller


@pytest.fixture
def controller() -> Iterator[tuple[str, dict[str, int]]]:
    calls = {"nodes": 0}
    log = DecisionLog(FakeClock())
    log.record(Decision("provisioning", LAUNCHED, "node/n1", "pods did not fit", price=0.1))

    def nodes() -> dict[str, object]:
        calls["nodes"] += 1
        return {"nodes": {"n1": {"pricePerHour": 0.1}, "bad": "not a mapping"}}

    answers = {"/api/v1/nodes": nodes, "/api/v1/pods/pending": lambda: {"pods": {}}}
    srv = ControllerHTTPServer("127.0.0.1", 0, log, lambda: {"synced": True}, answers)
    srv.start()
    try:
        yield f"http://127.0.0.1:{srv.port}", calls
    finally:
        srv.stop()


def test_the_controllers_answers(controller: tuple[str, dict[str, int]]) -> None:
    url, _ = controller
    got = ask_controller(ControllerAPI(url))
    assert got.error == ""
    assert got.nodes == {"n1": {"pricePerHour": 0.1}}
    assert got.decisions[0]["subject"] == "node/n1"
    assert got.cloud_problem == ""


def test_a_controller_not_configured_says_why() -> None:
    """Its 503's reason reaches the dashboard's error, not just the status code."""
    why = "not configured: cluster-name: required with --cloud-provider aws"
    srv = ControllerHTTPServer(
        "127.0.0.1", 0, DecisionLog(FakeClock()), lambda: {"notReady": why}, unavailable=lambda: why
    )
    srv.start()
    try:
        got = ask_controller(ControllerAPI(f"http://127.0.0.1:{srv.port}"))
    finally:
        srv.stop()
    assert got.error == f"the controller answered HTTP 503 for /api/v1/nodes: {why}"


def test_a_cloud_that_does_not_answer_is_passed_on() -> None:
    problem = "ec2 DescribeInstanceTypes: AuthFailure: AWS was not able to validate the credentials"
    answers = {
        "/api/v1/nodes": lambda: {"nodes": {}, "cloud": {"ready": False, "problem": problem}},
        "/api/v1/pods/pending": lambda: {"pods": {}},
    }
    srv = ControllerHTTPServer("127.0.0.1", 0, DecisionLog(FakeClock()), lambda: {"synced": True}, answers)
    srv.start()
    try:
        got = ask_controller(ControllerAPI(f"http://127.0.0.1:{srv.port}"))
    finally:
        srv.stop()
    assert got.error == "" and got.cloud_problem == problem


def test_an_unreachable_controller_is_said_plainly() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    got = ask_controller(ControllerAPI(url, timeout=1))
    assert got.error.startswith(f"the controller at {url} is unreachable") and got.nodes == {}
    assert ask_controller(None).error == "no controller URL is configured (--controller-url)"


def test_answers_are_cached_and_history_sampled(controller: tuple[str, dict[str, int]]) -> None:
    url, calls = controller
    clock = FakeClock()
    source = DashboardSource(None, ControllerAPI(url), clock, cluster_cost, cache_seconds=2)
    feed(source.state)
    first = source.read()
    source.read()
    assert calls["nodes"] == 1 and first.problem.startswith("no Kubernetes API is configured")
    clock.step(SAMPLE_SECONDS)
    source.read()
    assert calls["nodes"] == 2
    assert [s.time for s in source.read().history] == [clock.now() - SAMPLE_SECONDS, clock.now()]


def test_ask_keeps_the_controllers_4xx_and_raises_when_it_cannot_be_asked() -> None:
    def node(rest: str) -> tuple[int, object]:
        return (200, {"node": rest}) if rest == "n1" else (404, {"error": f"node {rest} not found"})

    srv = ControllerHTTPServer(
        "127.0.0.1", 0, DecisionLog(FakeClock()), lambda: {"synced": True}, prefixes={"/api/v1/explain/nodes/": node}
    )
    srv.start()
    try:
        source = DashboardSource(None, ControllerAPI(f"http://127.0.0.1:{srv.port}"), FakeClock(), cluster_cost)
        assert source.ask("/api/v1/explain/nodes/n1", 5) == (200, {"node": "n1"})
        assert source.ask("/api/v1/explain/nodes/x", 5) == (404, {"error": "node x not found"})
    finally:
        srv.stop()
    with pytest.raises(ControllerError, match="no controller URL"):
        DashboardSource(None, None, FakeClock(), cluster_cost).ask("/api/v1/explain/nodes/n1", 5)


def test_compute_posts_to_the_controller_and_keeps_its_4xx() -> None:
    def what_if(text: str) -> tuple[int, object]:
        return (200, {"pods": [text]}) if text.startswith("kind: Pod") else (400, {"error": "manifest: bad"})

    srv = ControllerHTTPServer(
        "127.0.0.1", 0, DecisionLog(FakeClock()), lambda: {"synced": True}, posts={"/api/v1/what-if": what_if}
    )
    srv.start()
    try:
        source = DashboardSource(None, ControllerAPI(f"http://127.0.0.1:{srv.port}"), FakeClock(), cluster_cost)
        assert source.compute("/api/v1/what-if", b"kind: Pod", 5) == (200, {"pods": ["kind: Pod"]})
        assert source.compute("/api/v1/what-if", b"kind: Service", 5) == (400, {"error": "manifest: bad"})
    finally:
        srv.stop()


def test_refused_settings_are_passed_on() -> None:
    problem = "configmap karpy/karpenter-global-settings is invalid: aws.tags: must be a JSON object of strings"
    answers = {
        "/api/v1/nodes": lambda: {"nodes": {}, "settingsProblem": problem},
        "/api/v1/pods/pending": lambda: {"pods": {}},
    }
    srv = ControllerHTTPServer("127.0.0.1", 0, DecisionLog(FakeClock()), lambda: {"synced": True}, answers)
    srv.start()
    try:
        got = ask_controller(ControllerAPI(f"http://127.0.0.1:{srv.port}"))
    finally:
        srv.stop()
    assert got.error == "" and got.settings_problem == problem
