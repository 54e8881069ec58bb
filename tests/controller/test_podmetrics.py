"""Pod startup time as Karpenter observes it: creation → its Ready condition's transition, once per
pod, for pods that were not already running when the controller started."""

from __future__ import annotations

from typing import Any

from prometheus_client import REGISTRY

from controller.core.timestamps import format_timestamp
from controller.kube.resources import PODS
from controller.podmetrics import PodStartupMetrics
from tests.builders.wire import make_pod
from tests.fakes.world import World


def observed() -> tuple[float, float]:
    count = REGISTRY.get_sample_value("karpenter_pods_startup_time_seconds_count") or 0.0
    return count, REGISTRY.get_sample_value("karpenter_pods_startup_time_seconds_sum") or 0.0


def running(name: str, ready_at: str | None, ready: str = "True") -> dict[str, Any]:
    pod = make_pod(name, node="n1")  # created 2024-01-01T00:00:00Z
    pod["status"]["phase"] = "Running"
    if ready_at is not None:
        pod["status"]["conditions"] = [{"type": "Ready", "status": ready, "lastTransitionTime": ready_at}]
    return pod


def test_a_new_pod_is_observed_once_at_its_ready_transition_and_old_ones_not_at_all() -> None:
    world = World.make()
    world.put(PODS, running("old", "2024-01-01T00:00:03Z"), make_pod("new"))
    world.sync()
    metrics = PodStartupMetrics(world.state)
    before = observed()
    assert metrics.reconcile() == 0  # running at start: its age says nothing about startup
    world.put(PODS, running("new", None))  # running, no Ready condition yet
    world.step(5)
    world.sync()
    assert metrics.reconcile() == 0
    world.put(PODS, running("new", "2024-01-01T00:00:01Z", ready="False"))  # its readiness probe has not passed
    world.sync()
    assert metrics.reconcile() == 0
    world.put(PODS, running("new", "2024-01-01T00:00:07Z"))
    world.step(60)  # however late this job sees it, the figure is the condition's own time
    world.sync()
    assert metrics.reconcile() == 1
    assert observed() == (before[0] + 1, before[1] + 7.0)
    assert metrics.reconcile() == 0  # once per pod
    world.put(PODS, running("quick", "2024-01-01T00:00:02Z"))  # created and Ready between two runs
    world.sync()
    assert metrics.reconcile() == 1 and observed() == (before[0] + 2, before[1] + 9.0)


def test_a_pod_created_after_the_start_is_observed_even_if_the_first_synced_run_finds_it_running() -> None:
    # the job runs every few seconds and the watches take time to sync: a pod created after the
    # controller started may be Ready before the job first looks
    world = World.make()
    started = world.clock.now()
    metrics = PodStartupMetrics(world.state, started=started)
    old = running("old", format_timestamp(started - 50))
    old["metadata"]["creationTimestamp"] = format_timestamp(started - 60)
    quick = running("quick", None)
    quick["metadata"]["creationTimestamp"] = format_timestamp(started + 1)
    quick["status"]["conditions"] = [
        {"type": "Ready", "status": "True", "lastTransitionTime": format_timestamp(started + 4)}
    ]
    world.put(PODS, old, quick)
    world.step(6)
    world.sync()
    before = observed()
    assert metrics.reconcile() == 1  # "quick", not "old" (created before the start)
    assert observed() == (before[0] + 1, before[1] + 3.0)
