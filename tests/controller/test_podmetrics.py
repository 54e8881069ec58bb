"""Pod startup time: observed once per pod, from creation to the first snapshot showing it Running."""

from __future__ import annotations

from prometheus_client import REGISTRY

from controller.kube.resources import PODS
from controller.podmetrics import PodStartupMetrics
from tests.builders.wire import make_pod
from tests.fakes.world import World


def count() -> float:
    return REGISTRY.get_sample_value("karpenter_pods_startup_time_seconds_count") or 0.0


def test_each_pod_is_observed_once_when_it_starts_running_and_old_ones_not_at_all() -> None:
    world = World.make()
    already = make_pod("old", node="n1")
    already["status"]["phase"] = "Running"
    world.put(PODS, already, make_pod("new"))
    world.sync()
    metrics = PodStartupMetrics(world.state)
    before = count()
    assert metrics.reconcile() == 0  # running at start: its age says nothing about startup
    started = make_pod("new", node="n1")
    started["status"]["phase"] = "Running"
    world.put(PODS, started)
    world.step(5)
    world.sync()
    assert metrics.reconcile() == 1 and count() == before + 1
    assert metrics.reconcile() == 0  # once per pod
