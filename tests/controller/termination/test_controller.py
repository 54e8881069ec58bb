"""Termination: cordon, evict (PDB 429 retried), do-not-evict waits, instance deleted, finalizer removed."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from controller.clock import FakeClock
from controller.cloudprovider.aws.ratelimit import Buckets
from controller.cloudprovider.base import Instance, NodeRequest
from controller.cloudprovider.batcher import Window
from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.cloudprovider.simulated.provider import SimulatedCloudProvider
from controller.core import labels as L
from controller.core.requirements import Requirements
from controller.kube.errors import TooManyRequestsError
from controller.kube.resources import NODES, PODS
from controller.state.cluster import ClusterState
from controller.termination.controller import TerminationController
from tests.builders.wire import make_node, make_pod
from tests.fakes.cloudprovider import FakeCloudProvider
from tests.fakes.kube import FakeKube
from tests.fakes.world import World


@dataclass
class Env:
    world: World
    ctrl: TerminationController

    @property
    def clock(self) -> FakeClock:
        return self.world.clock

    @property
    def kube(self) -> FakeKube:
        return self.world.kube

    @property
    def cloud(self) -> FakeCloudProvider:
        return self.world.cloud

    @property
    def state(self) -> ClusterState:
        return self.world.state

    def tick(self, seconds: float = 1.0) -> None:
        self.world.sync()
        self.ctrl.reconcile()
        self.clock.step(seconds)


def make_env(*pods: dict) -> Env:  # type: ignore[type-arg]
    world = World.make()
    world.put(NODES, make_node("n1", provider_id="fake:///z/n1"))
    world.cloud.add(Instance("fake:///z/n1", "n1", "m5.large", "z", "on-demand", 0.1, "default", 0.0))
    world.put(PODS, *pods)
    ctrl = TerminationController(world.state, world.kube, world.cloud, world.clock, world.recorder, world.decisions)
    return Env(world, ctrl)


def test_a_deleted_node_is_cordoned_drained_terminated_and_released() -> None:
    env = make_env(make_pod("a", node="n1"), make_pod("ds", node="n1", owner_kind="DaemonSet"))
    env.kube.delete(NODES, "n1")  # as `kubectl delete node` or deprovisioning does
    env.tick()
    node = env.kube.find(NODES, "n1")
    assert node is not None and node["spec"]["unschedulable"] is True
    assert env.kube.evictions == ["default/a"]
    assert env.kube.find(PODS, "a", "default") is None  # evicted pods without finalizers are gone
    env.tick()
    assert env.kube.find(NODES, "n1") is None
    assert env.cloud.instances == {} and env.cloud.delete_calls == ["fake:///z/n1"]


def test_pdb_429_is_retried_with_backoff_and_node_waits() -> None:
    env = make_env(make_pod("a", node="n1"))
    env.kube.evict_errors["default/a"] = [TooManyRequestsError("pdb", 429)] * 3
    env.kube.delete(NODES, "n1")
    for _ in range(3):
        env.tick(0.1)
    assert env.kube.find(NODES, "n1") is not None and env.cloud.instances
    assert any("violates a PDB" in e["message"] for e in env.kube.events)
    for _ in range(10):
        env.tick(1.0)
    assert env.kube.evictions == ["default/a"]


def test_do_not_evict_pod_is_waited_for() -> None:
    env = make_env(make_pod("keep", node="n1", annotations={L.DO_NOT_EVICT: "true"}))
    env.kube.delete(NODES, "n1")
    for _ in range(3):
        env.tick()
    assert env.kube.evictions == [] and env.kube.find(NODES, "n1") is not None
    env.kube.put(PODS, make_pod("keep", node="n1", phase="Succeeded", annotations={L.DO_NOT_EVICT: "true"}))
    env.tick()
    assert env.kube.find(NODES, "n1") is None


def test_instance_already_gone_removes_finalizer() -> None:
    env = make_env(make_pod("keep", node="n1", annotations={L.DO_NOT_EVICT: "true"}))
    env.cloud.instances.clear()
    env.kube.delete(NODES, "n1")
    env.tick()
    assert env.kube.find(NODES, "n1") is None


def test_finalizer_removal_does_not_drop_a_finalizer_added_meanwhile() -> None:
    # issue 14, item 6: the finalizer list was patched without a version check, so a finalizer
    # another controller added after our snapshot was silently removed
    env = make_env()
    env.cloud.instances.clear()
    env.kube.delete(NODES, "n1")
    env.world.sync()  # our view: only karpy's finalizer
    node = env.kube.get(NODES, "n1")
    env.kube.patch(NODES, "n1", {"metadata": {"finalizers": [*node["metadata"]["finalizers"], "example.com/keep"]}})
    env.ctrl.reconcile()  # acts on the stale view: must not drop example.com/keep
    after = env.kube.find(NODES, "n1")
    assert after is not None and "example.com/keep" in after["metadata"]["finalizers"]
    env.tick()  # a fresh view: only karpy's own finalizer is removed
    final = env.kube.find(NODES, "n1")
    assert final is not None and final["metadata"]["finalizers"] == ["example.com/keep"]


def four_deleted_nodes(*pods_of: list[dict]) -> World:  # type: ignore[type-arg]
    """Nodes n0..n3 (instances in the fake cloud), each with the pods given for it, deleted."""
    world = World.make()
    for i, pods in enumerate(pods_of):
        world.put(NODES, make_node(f"n{i}", provider_id=f"fake:///z/n{i}"))
        world.cloud.add(Instance(f"fake:///z/n{i}", f"n{i}", "m5.large", "z", "on-demand", 0.1, "default", 0.0))
        world.put(PODS, *pods)
    for i in range(len(pods_of)):
        world.kube.delete(NODES, f"n{i}")
    world.sync()
    return world


def test_the_nodes_of_a_pass_are_drained_together(monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 21: a 51-node consolidation drained one node after another took 5 minutes at 20,000
    # pods; a pass cordons every node, then evicts every node's pods at once
    world = four_deleted_nodes(*([make_pod(f"p{i}", node=f"n{i}")] for i in range(4)))
    together = threading.Barrier(4, timeout=10)  # broken unless the four evictions are in flight at once
    evict = world.kube.evict

    def evict_together(namespace: str, pod: str) -> None:
        together.wait()
        evict(namespace, pod)

    monkeypatch.setattr(world.kube, "evict", evict_together)
    ctrl = TerminationController(world.state, world.kube, world.cloud, world.clock, world.recorder, world.decisions)
    done = ctrl.reconcile()
    assert sorted(done.evicted) == [f"default/p{i}" for i in range(4)]
    assert sorted(done.cordoned) == ["n0", "n1", "n2", "n3"]
    # every node cordoned before any of its pods goes: an evicted pod's replacement cannot land on one
    calls = [call for call, _ in world.kube.calls if call in ("patch", "evict")]
    assert calls == ["patch"] * 4 + ["evict"] * 4
    assert len(world.events("Evicted")) == 4
    world.sync()
    assert sorted(ctrl.reconcile().terminated) == ["n0", "n1", "n2", "n3"] and world.cloud.instances == {}


def test_a_node_a_pdb_holds_does_not_hold_the_others() -> None:
    world = four_deleted_nodes(*([make_pod(f"p{i}", node=f"n{i}")] for i in range(4)))
    world.kube.evict_errors["default/p0"] = [TooManyRequestsError("pdb", 429)] * 100
    ctrl = TerminationController(world.state, world.kube, world.cloud, world.clock, world.recorder, world.decisions)
    ctrl.reconcile()
    world.sync()
    assert sorted(ctrl.reconcile().terminated) == ["n1", "n2", "n3"]
    assert world.names(NODES) == ["n0"] and any("violates a PDB" in e["message"] for e in world.kube.events)
    world.kube.evict_errors.clear()  # the budget allows it now: evicted once its backoff has passed
    for _ in range(5):
        world.clock.step(1.0)
        world.sync()
        ctrl.reconcile()
    assert world.names(NODES) == [] and sorted(world.kube.evictions) == [f"default/p{i}" for i in range(4)]


def test_the_instances_of_the_nodes_drained_in_a_pass_go_in_one_terminate_call(tmp_path: Path) -> None:
    world = World.make()
    four = Window(idle=30.0, max_wait=60.0, max_items=4)  # closes with the four, however slow the machine
    cloud = SimulatedCloudProvider(
        tmp_path / "cloud.db", world.clock, cluster="karpy", node_label="", describe_window=four, terminate_window=four
    )
    request = NodeRequest("default", Requirements(), tuple(it for it in simulated_catalog() if it.name == "m5.large"))
    for i in range(4):
        inst = cloud.create(request)
        world.put(NODES, make_node(f"n{i}", provider_id=inst.provider_id))
    ctrl = TerminationController(world.state, world.kube, cloud, world.clock, world.recorder, world.decisions)
    for i in range(4):
        world.kube.delete(NODES, f"n{i}")
    world.sync()
    done = ctrl.reconcile()
    # four nodes drained together: one TerminateInstances, their lookups one DescribeInstances
    assert cloud.calls["terminate_instances"] == 1 and cloud.calls["describe_instances"] == 1
    assert sorted(done.terminated) == [f"n{i}" for i in range(4)] and cloud.list() == []
    assert world.kube.items(NODES) == []


def test_a_throttled_terminate_stops_the_pass_and_no_call_is_made_before_its_retry_after(tmp_path: Path) -> None:
    world = World.make()
    alone = Window(idle=0.0, max_wait=0.0, max_items=1)  # one instance a call: each delete is its own call
    cloud = SimulatedCloudProvider(
        tmp_path / "cloud.db", world.clock, cluster="karpy", node_label="",
        api_limits=Buckets({"terminate_instances": (1.0, 1.0)}, describe=None),  # one now, then 1 a second
        describe_window=alone, terminate_window=alone,
    )  # fmt: skip
    request = NodeRequest("default", Requirements(), tuple(it for it in simulated_catalog() if it.name == "m5.large"))
    for i in range(4):
        world.put(NODES, make_node(f"n{i}", provider_id=cloud.create(request).provider_id))
        world.kube.delete(NODES, f"n{i}")
    one_at_a_time = TerminationController(
        world.state, world.kube, cloud, world.clock, world.recorder, world.decisions, workers=1
    )
    world.sync()
    first = one_at_a_time.reconcile()
    # n0 terminated, n1 refused (RequestLimitExceeded); n2 and n3 not tried: no call into an empty bucket
    assert first.terminated == ["n0"] and cloud.calls["terminate_instances"] == 2
    assert cloud.throttled == {"terminate_instances": 1}
    world.sync()
    assert one_at_a_time.reconcile().terminated == [] and cloud.calls["terminate_instances"] == 2  # waits
    for _ in range(10):
        if not world.kube.items(NODES):
            break
        world.clock.step(1.0)
        world.sync()
        one_at_a_time.reconcile()
    assert world.kube.items(NODES) == [] and cloud.list() == []  # every instance gone, each node released
    # a token a second, one instance a call: each pass terminates one and meets one refusal, never more
    assert cloud.throttled == {"terminate_instances": 3} and cloud.calls["terminate_instances"] == 7
