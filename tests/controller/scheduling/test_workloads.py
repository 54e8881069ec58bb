"""Workloads → pods (`controller/scheduling/workloads.py`)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.scheduling.pods import PodSpecError, pod_request
from controller.scheduling.workloads import daemonset_pod, daemonset_pods, expand


def workload(kind: str, **spec: Any) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c"}]}}
    return {"kind": kind, "metadata": {"name": "x", "namespace": "ns"}, "spec": {"template": template, **spec}}


@pytest.mark.parametrize(
    ("kind", "spec", "count"),
    [("Deployment", {"replicas": 3}, 3), ("ReplicaSet", {}, 1), ("StatefulSet", {"replicas": 0}, 0),
     ("Job", {"parallelism": 5, "completions": 2}, 2), ("Job", {}, 1)],
)  # fmt: skip
def test_expansion_counts(kind: str, spec: dict[str, Any], count: int) -> None:
    assert len(expand(workload(kind, **spec))) == count


def test_expanded_pods_are_named_after_their_owner() -> None:
    pods = [pod_request(p) for p in expand(workload("Deployment", replicas=2))]
    assert [p.key for p in pods] == ["ns/x-0", "ns/x-1"]
    assert pods[0].labels == {"app": "x"}
    assert pods[0].owner_kind == "Deployment"


def test_daemonset_pod_is_owned_by_the_daemonset() -> None:
    p = pod_request(daemonset_pod(workload("DaemonSet")))
    assert (p.key, p.owner_kind) == ("ns/x", "DaemonSet")


def test_the_controllers_read_daemonsets_through_the_same_converter_skipping_unreadable_ones() -> None:
    broken = workload("DaemonSet")
    broken["metadata"]["name"] = "broken"
    broken["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    pods = daemonset_pods([workload("DaemonSet"), broken])
    assert [(p.key, p.owner_kind, dict(p.labels)) for p in pods] == [("ns/x", "DaemonSet", {"app": "x"})]


def test_malformed_workloads() -> None:
    with pytest.raises(PodSpecError, match=r"spec\.template"):
        expand({"kind": "Deployment", "metadata": {"name": "x"}, "spec": {}})
    with pytest.raises(PodSpecError, match="replicas"):
        expand(workload("Deployment", replicas="three"))
    with pytest.raises(PodSpecError, match=r"metadata\.name"):
        expand({"kind": "Deployment", "spec": {}})
