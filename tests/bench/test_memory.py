"""bench/memory.py's parts: the pending pods and nodes it creates, and what a measurement reads
of the process (the cluster and the controller are the bench's own run)."""

from __future__ import annotations

import tracemalloc

from bench.memory import NODE_TAINT, SCHEDULER, kwok_node, measure, pending_pods
from controller.clock import FakeClock
from controller.kube.resources import NODES, PODS
from controller.state.cluster import ClusterState
from controller.state.views import node_view, pod_view


def test_the_pending_pods_are_the_harness_shapes_with_unique_names_for_no_scheduler() -> None:
    pods = pending_pods(1000)
    assert len(pods) == 1000 and len({p["metadata"]["name"] for p in pods}) == 1000
    assert {p["spec"]["schedulerName"] for p in pods} == {SCHEDULER}
    assert {pod_view(p).request is not None for p in pods} == {True}
    assert any(p["spec"].get("topologySpreadConstraints") for p in pods)


def test_the_nodes_are_kwoks_and_tainted_against_every_bench_pod() -> None:
    node = node_view(kwok_node(7))
    assert node.labels["kwok.x-k8s.io/node"] == "fake" and node.name == "memory-node-00007"
    assert [t.key for t in node.taints] == [NODE_TAINT["key"]] and not node.owned


class Counting(ClusterState):
    relists: dict[str, int] = {}


def test_a_measurement_reads_the_process_and_the_state() -> None:
    state = Counting(FakeClock(), kinds=[PODS.name, NODES.name])
    state.replace(PODS.name, pending_pods(10))
    state.replace(NODES.name, [kwok_node(0)])
    light = measure([state], top=3, light=True)
    assert light["state"]["pods"] == 10 and light["state"]["nodes"] == 1 and light["rss_mib"] > 0
    untraced = measure([state], top=3)
    assert untraced["pymalloc"]["arenas"] > 0 and untraced["pymalloc"]["allocated_blocks"] > 0
    assert "top_lines" not in untraced
    tracemalloc.start()
    try:
        full = measure([state], top=3)
    finally:
        tracemalloc.stop()
    assert full["pymalloc"] == {}  # tracemalloc's hooks hide pymalloc's statistics
    assert full["glibc"]["arenas"] >= 1 and full["glibc"]["system"] > 0
    assert full["peak_mib"] >= full["rss_mib"] > 0 and full["threads"] >= 1
    assert len(full["top_lines"]) == 3 and full["traced_mib"] > 0
