"""Garbage collection: leaked instances after 30 s, nodes whose instance is gone."""

from __future__ import annotations

from controller.cloudprovider.base import Instance
from controller.garbagecollection.garbagecollection import GarbageCollectionController
from controller.kube.resources import NODES
from tests.builders.wire import make_node
from tests.fakes.world import World


def collector(world: World, **kw: int) -> GarbageCollectionController:
    return GarbageCollectionController(world.state, world.kube, world.cloud, world.clock, world.decisions, **kw)


def instance(name: str, created: float) -> Instance:
    return Instance(f"fake:///z/{name}", name, "m5.large", "z", "spot", 0.03, "default", created)


def test_leaked_instance_is_terminated_after_30_seconds_only(world: World) -> None:
    gc = collector(world)
    clock, kube, cloud = world.clock, world.kube, world.cloud
    cloud.add(instance("leak", clock.now()))
    cloud.add(instance("ok", clock.now()))
    kube.put(NODES, make_node("ok", provider_id="fake:///z/ok"))
    world.sync()
    clock.step(29)
    assert gc.reconcile().leaked_instances == ()
    clock.step(2)
    gc.reconcile()
    assert sorted(cloud.instances) == ["fake:///z/ok"]


def test_node_whose_instance_is_gone_is_deleted(world: World) -> None:
    gc = collector(world)
    clock, kube, cloud = world.clock, world.kube, world.cloud
    cloud.add(instance("orphan", clock.now()))
    kube.put(NODES, make_node("orphan", provider_id="fake:///z/orphan", finalizers=()))
    kube.put(NODES, make_node("foreign", provisioner=None, provider_id="fake:///z/foreign", finalizers=()))
    world.sync()
    gc.reconcile()
    cloud.instances.clear()  # terminated outside karpy
    gc.reconcile()
    world.expect_nodes("foreign")


def test_an_empty_store_after_failover_deletes_no_node(world: World) -> None:
    # issue 14, item 3: a new leader whose cloud store is empty (its own emptyDir) saw no
    # instances and deleted every node; a node is deleted only if its instance was seen
    gc = collector(world)
    kube = world.kube
    for i in range(20):
        kube.put(NODES, make_node(f"n{i}", provider_id=f"fake:///z/n{i}", finalizers=()))
    world.sync()
    result = gc.reconcile()
    assert result.orphan_nodes == () and len(result.unconfirmed_nodes) == 20
    assert len(kube.items(NODES)) == 20


def test_a_store_that_remembers_a_terminated_instance_confirms_it(world: World) -> None:
    gc = collector(world)
    clock, kube, cloud = world.clock, world.kube, world.cloud
    cloud.add(instance("gone", clock.now()))
    cloud.delete("fake:///z/gone")  # terminated before this controller ever listed it
    kube.put(NODES, make_node("gone", provider_id="fake:///z/gone", finalizers=()))
    world.sync()
    assert gc.reconcile().orphan_nodes == ("gone",)


def test_node_deletions_per_pass_are_capped(world: World) -> None:
    clock, kube, cloud = world.clock, world.kube, world.cloud
    gc = collector(world, max_node_deletions=3)
    for i in range(8):
        cloud.add(instance(f"n{i}", clock.now()))
        kube.put(NODES, make_node(f"n{i}", provider_id=f"fake:///z/n{i}", finalizers=()))
    world.sync()
    gc.reconcile()
    cloud.instances.clear()
    assert len(gc.reconcile().orphan_nodes) == 3
    assert len(kube.items(NODES)) == 5
