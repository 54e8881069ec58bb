"""Garbage collection: leaked instances after 30 s, nodes whose instance is gone."""

from __future__ import annotations

from controller.clock import FakeClock
from controller.cloudprovider.base import Instance
from controller.decisions import DecisionLog
from controller.garbagecollection.garbagecollection import GarbageCollectionController
from controller.kube.resources import NODES, WATCHED
from controller.state.cluster import ClusterState
from tests.builders.wire import make_node
from tests.fakes.cloudprovider import FakeCloudProvider
from tests.fakes.kube import FakeKube


def setup() -> tuple[FakeClock, FakeKube, FakeCloudProvider, ClusterState, GarbageCollectionController]:
    clock = FakeClock()
    kube, cloud, state = FakeKube(clock), FakeCloudProvider(clock=clock), ClusterState(clock)
    gc = GarbageCollectionController(state, kube, cloud, clock, DecisionLog(clock))
    return clock, kube, cloud, state, gc


def sync(kube: FakeKube, state: ClusterState) -> None:
    for kind in WATCHED:
        state.replace(kind.name, kube.items(kind))


def instance(name: str, created: float) -> Instance:
    return Instance(f"fake:///z/{name}", name, "m5.large", "z", "spot", 0.03, "default", created)


def test_leaked_instance_is_terminated_after_30_seconds_only() -> None:
    clock, kube, cloud, state, gc = setup()
    cloud.add(instance("leak", clock.now()))
    cloud.add(instance("ok", clock.now()))
    kube.put(NODES, make_node("ok", provider_id="fake:///z/ok"))
    sync(kube, state)
    clock.step(29)
    assert gc.reconcile().leaked_instances == ()
    clock.step(2)
    gc.reconcile()
    assert sorted(cloud.instances) == ["fake:///z/ok"]


def test_node_without_instance_is_deleted() -> None:
    _, kube, _, state, gc = setup()
    kube.put(NODES, make_node("orphan", provider_id="fake:///z/orphan", finalizers=()))
    kube.put(NODES, make_node("foreign", provisioner=None, provider_id="fake:///z/foreign", finalizers=()))
    sync(kube, state)
    gc.reconcile()
    assert [n["metadata"]["name"] for n in kube.items(NODES)] == ["foreign"]
