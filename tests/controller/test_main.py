"""Process wiring: one job per controller, and only the leader's jobs act."""

from __future__ import annotations

from controller.clock import FakeClock
from controller.main import build, job_body
from controller.settings import Settings
from tests.fakes.cloudprovider import FakeCloudProvider
from tests.fakes.kube import FakeKube


class Recorder:
    name = "recorder"

    def __init__(self) -> None:
        self.calls = 0

    def reconcile(self) -> None:
        self.calls += 1


def test_build_wires_one_job_per_controller() -> None:
    clock = FakeClock()
    app = build(Settings(), kube=FakeKube(clock), cloud=FakeCloudProvider(clock=clock), clock=clock)
    names = [j.controller.name for j in app.jobs]
    assert names[:5] == ["provisioning", "counter", "node.initialization", "node.termination", "garbagecollection"]
    assert len(set(names)) == len(names)


def test_jobs_act_only_while_leading() -> None:
    clock = FakeClock()
    app = build(Settings(), kube=FakeKube(clock), cloud=FakeCloudProvider(clock=clock), clock=clock)
    rec = Recorder()
    body = job_body(app, rec)
    body()
    assert rec.calls == 0  # not leader yet
    assert app.elector is not None and app.elector.step()
    body()
    assert rec.calls == 1
    app.stop.set()
    body()
    assert rec.calls == 1  # shutting down: no new action starts
