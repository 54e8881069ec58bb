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


def test_node_whose_instance_is_gone_is_deleted() -> None:
    clock, kube, cloud, state, gc = setup()
    cloud.add(instance("orphan", clock.now()))
    kube.put(NODES, make_node("orphan", provider_id="fake:///z/orphan", finalizers=()))
    kube.put(NODES, make_node("foreign", provisioner=None, provider_id="fake:///z/foreign", finalizers=()))
    sync(kube, state)
    gc.reconcile()
    cloud.instances.clear()  # terminated outside karpy
    gc.reconcile()
    assert [n["metadata"]["name"] for n in kube.items(NODES)] == ["foreign"]


def test_an_empty_store_after_failover_deletes_no_node() -> None:
    # issue 14, item 3: a new leader whose cloud store is empty (its own emptyDir) saw no
    # instances and deleted every node; a node is deleted only if its instance was seen
    _, kube, _, state, gc = setup()
    for i in range(20):
        kube.put(NODES, make_node(f"n{i}", provider_id=f"fake:///z/n{i}", finalizers=()))
    sync(kube, state)
    result = gc.reconcile()
    assert result.orphan_nodes == () and len(result.unconfirmed_nodes) == 20
    assert len(kube.items(NODES)) == 20


def test_a_store_that_remembers_a_terminated_instance_confirms_it() -> None:
    clock, kube, cloud, state, gc = setup()
    cloud.add(instance("gone", clock.now()))
    cloud.delete("fake:///z/gone")  # terminated before this controller ever listed it
    kube.put(NODES, make_node("gone", provider_id="fake:///z/gone", finalizers=()))
    sync(kube, state)
    assert gc.reconcile().orphan_nodes == ("gone",)


def test_node_deletions_per_pass_are_capped() -> None:
    clock, kube, cloud, state, _ = setup()
    gc = GarbageCollectionController(state, kube, cloud, clock, DecisionLog(clock), max_node_deletions=3)
    for i in range(8):
        cloud.add(instance(f"n{i}", clock.now()))
        kube.put(NODES, make_node(f"n{i}", provider_id=f"fake:///z/n{i}", finalizers=()))
    sync(kube, state)
    gc.reconcile()
    cloud.instances.clear()
    assert len(gc.reconcile().orphan_nodes) == 3
    assert len(kube.items(NODES)) == 5
