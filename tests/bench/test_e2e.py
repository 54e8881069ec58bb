"""The e2e benchmark's report of the cloud API economy, read from a controller's /metrics text, and
its pod watch's record of when each pod reached each stage."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from bench.e2e import (
    ONE_PER_NODE,
    PodProgress,
    api_economy,
    by_operation,
    deployment,
    deprovisioning_passes,
    scenario_arg,
    workloads_of,
)

METRICS = """\
# TYPE karpy_cloudprovider_api_calls_total counter
karpy_cloudprovider_api_calls_total{provider="simulated",operation="create_fleet"} 60.0
karpy_cloudprovider_api_calls_total{provider="simulated",operation="describe_instances"} 250.0
karpy_cloudprovider_api_throttled_total{provider="simulated",operation="create_fleet"} 4.0
karpy_cloudprovider_api_throttle_seconds_total{provider="simulated",operation="create_fleet"} 0.8
rest_client_requests_total{code="200",method="GET"} 12.0
"""


def test_calls_per_1000_pods_and_what_throttling_cost() -> None:
    assert by_operation(METRICS, "karpy_cloudprovider_api_calls_total") == {
        "create_fleet": 60.0,
        "describe_instances": 250.0,
    }
    economy = api_economy(METRICS, 500)
    assert economy["cloud_calls_per_1000_pods"] == {"create_fleet": 120.0, "describe_instances": 500.0}
    assert economy["cloud_calls_per_1000_pods_total"] == 620.0
    assert economy["cloud_throttled"] == {"create_fleet": 4} and economy["cloud_throttle_seconds"] == 0.8
    assert api_economy("", 0)["cloud_calls_per_1000_pods"] == {}


def test_the_deprovisioning_passes_and_their_seconds_are_summed_over_methods() -> None:
    text = """\
karpenter_deprovisioning_evaluation_duration_seconds_count{method="all"} 7.0
karpenter_deprovisioning_evaluation_duration_seconds_sum{method="all"} 1.25
karpenter_deprovisioning_evaluation_duration_seconds_count{method="singlenodeconsolidation"} 2.0
karpenter_deprovisioning_evaluation_duration_seconds_sum{method="singlenodeconsolidation"} 3.5
karpenter_deprovisioning_evaluation_duration_seconds_bucket{method="all",le="1.0"} 7.0
"""
    assert deprovisioning_passes(text) == {"deprovisioning_passes": 9, "deprovisioning_pass_seconds": 4.8}
    assert deprovisioning_passes("") == {"deprovisioning_passes": 0, "deprovisioning_pass_seconds": 0.0}


def test_a_pod_count_is_the_1000_pod_mix_scaled() -> None:
    assert [(w[0], w[1]) for w in workloads_of("200")] == [("bench-small", 100), ("bench-large", 100)]
    assert sum(w[1] for w in workloads_of("5000")) == 5000
    assert scenario_arg("200") == "200"
    for bad in ("0", "lots", "9000"):
        with pytest.raises(argparse.ArgumentTypeError, match="a pod count 1-5000"):
            scenario_arg(bad)


def test_the_nodes100_scenario_asks_for_a_node_per_pod() -> None:
    ((name, replicas, cpu, memory, zonal),) = workloads_of("nodes100")
    assert replicas == 100 and scenario_arg("nodes100") == "nodes100"
    doc = deployment(name, replicas, cpu, memory, zonal, one_per_node=name in ONE_PER_NODE)
    (term,) = doc["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term == {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": name}}}
    assert "affinity" not in deployment("bench-web", 1, "1", "1Gi", True)["spec"]["template"]["spec"]


def _pod(uid: str, app: str = "bench-web", node: str = "", phase: str = "Pending", unschedulable: bool = False) -> Any:
    conditions = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}] if unschedulable else []
    return {
        "metadata": {"name": uid, "uid": uid, "labels": {"app": app}},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase, "conditions": conditions},
    }


def test_pod_progress_records_the_first_time_each_pod_reached_each_stage() -> None:
    progress = PodProgress(None, {"bench-web"})  # type: ignore[arg-type]  # fed directly, no watch
    progress._apply("ADDED", _pod("a"))
    progress._apply("MODIFIED", _pod("a", unschedulable=True))
    progress._apply("MODIFIED", _pod("a", node="n1", unschedulable=True))
    progress._apply("MODIFIED", _pod("a", node="n1", phase="Running"))
    progress._apply("ADDED", _pod("other", app="not-bench", unschedulable=True))
    stages = progress.stages()
    assert list(stages) == ["a"]
    times = stages["a"]
    assert list(times) == ["created", "unschedulable", "bound", "running"]
    assert times["created"] <= times["unschedulable"] <= times["bound"] <= times["running"]
    first = dict(times)
    progress._apply("MODIFIED", _pod("a", node="n1", phase="Running"))  # seen again: first times kept
    assert progress.stages()["a"] == first
    assert progress.counts() == (1, 1)
