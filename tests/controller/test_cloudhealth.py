"""A cloud that does not answer keeps the controller up, says so everywhere, launches nothing, and
the controller recovers by itself once it answers (issue 20, defect 5)."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import REGISTRY

from controller.clock import FakeClock
from controller.cloudhealth import UNAVAILABLE, CloudHealth
from controller.cloudprovider.aws.api import ApiError, AWSApi
from controller.cloudprovider.aws.pricing import Prices
from controller.cloudprovider.aws.provider import AWSCloudProvider, AWSSettings
from controller.kube.resources import PROVISIONERS
from controller.main import App, build, job_body
from controller.settings import Settings
from tests.builders.wire import make_provisioner
from tests.fakes.aws import FakeTransport
from tests.fakes.kube import FakeKube
from tests.fakes.world import feed

AUTH = ApiError("AuthFailure", "AWS was not able to validate the provided access credentials")
DOWN = ApiError("EndpointConnectionError", 'Could not connect to the endpoint URL: "http://127.0.0.1:9/"')


class Launcher:
    name = "provisioning-probe"

    def __init__(self) -> None:
        self.calls = 0

    def reconcile(self) -> None:
        self.calls += 1


def ready_gauge() -> float | None:
    return REGISTRY.get_sample_value("karpy_cloudprovider_ready", {"provider": "aws"})


def aws_app(transport: FakeTransport) -> tuple[App, FakeKube, FakeClock]:
    clock = FakeClock()
    kube = FakeKube(clock)
    settings = Settings(cloud_provider="aws", aws_region="us-east-1", cluster_name="c")
    cloud = AWSCloudProvider(
        AWSApi(transport, sleep=lambda _: None),
        AWSSettings("us-east-1", "c"),
        clock,
        Prices("us-east-1", {"onDemand": {"us-east-1": {"m5.large": 0.096}}}),
    )
    app = build(settings, kube=kube, cloud=cloud, clock=clock)
    feed(app.state, {PROVISIONERS.name: [make_provisioner("default")]})
    assert app.elector is not None and app.elector.step()
    return app, kube, clock


def refresh(app: App) -> None:
    job = next(j for j in app.jobs if j.controller.name == "aws.refresh")
    job_body(app, job.controller, job.needs_cloud)()


@pytest.mark.parametrize("error", [AUTH, DOWN], ids=["bad-credential", "unreachable-endpoint"])
def test_a_cloud_that_does_not_answer_gates_launches_until_it_does(
    error: ApiError, caplog: pytest.LogCaptureFixture
) -> None:
    transport = FakeTransport()
    transport.errors["describe_instance_types"] = [error] * 3
    app, kube, _ = aws_app(transport)
    gated = next(j for j in app.jobs if j.controller.name == "provisioning")
    assert gated.needs_cloud and next(j for j in app.jobs if j.controller.name == "aws.refresh").first_run_now
    probe = Launcher()
    launch = job_body(app, probe, needs_cloud=True)

    # not checked yet: nothing launches, not ready
    launch()
    assert probe.calls == 0 and "not been checked" in app.status()["notReady"]

    with caplog.at_level(logging.ERROR, logger="controller.cloudhealth"):
        refresh(app)
        refresh(app)
    said = [r.getMessage() for r in caplog.records if r.name == "controller.cloudhealth"]
    assert len(said) == 1  # once per problem
    assert error.code in said[0]
    status = app.status()
    assert error.code in status["notReady"] and not status["cloud"]["ready"]
    assert error.code in app.insight.nodes()["cloud"]["problem"]
    assert ready_gauge() == 0
    events = [e for e in kube.events if e["reason"] == UNAVAILABLE]
    assert len(events) == 1 and events[0]["involvedObject"]["name"] == "default"
    assert error.code in events[0]["message"] and events[0]["type"] == "Warning"
    launch()
    assert probe.calls == 0
    assert app.insight.prices() == {}  # no cloud call from the API or a scrape meanwhile
    calls = len(transport.calls)
    app.insight.nodes()
    assert len(transport.calls) == calls

    # the cloud answers again (the third error is the last): ready, launches resume
    refresh(app)
    assert not app.health.ready()
    refresh(app)
    assert app.health.ready() and app.status()["notReady"] == ""
    assert ready_gauge() == 1
    launch()
    assert probe.calls == 1
    assert app.insight.prices()  # prices read from the catalog now


def test_the_simulated_cloud_is_ready_from_the_start() -> None:
    clock = FakeClock()
    health = CloudHealth(clock, "simulated")
    assert health.ready() and health.problem() == ""


def test_a_new_problem_is_logged_again_and_the_first_failure_dates_it() -> None:
    clock = FakeClock()
    started = clock.now()
    health = CloudHealth(clock, "aws", checked=False)
    assert not health.ready()
    assert health.failed("a") and not health.failed("a")
    clock.step(10)
    assert health.failed("b")
    assert health.to_json() == {"ready": False, "problem": "b", "since": started}
    clock.step(5)
    health.ok()
    assert health.to_json() == {"ready": True, "problem": "", "since": clock.now()}
