"""The cluster as the scheduler sees it: one builder for provisioning, simulations and checks."""

from __future__ import annotations

from controller.kube.resources import DAEMONSETS, NODES, PODS, PROVISIONERS
from controller.state.cluster import ClusterState
from controller.state.schedulinginput import provisionable, provisioning_input, scheduling_input
from tests.builders.wire import make_node, make_pod, make_provisioner
from tests.fakes.world import state_of


def daemonset(name: str, cpu: str = "100m", rv: str = "1") -> dict[str, object]:
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system", "resourceVersion": rv},
        "spec": {"template": template},
    }


def world(*, daemonsets: tuple[dict[str, object], ...] = ()) -> ClusterState:
    objects = {
        PODS.name: [
            make_pod("pending"),
            make_pod("bad", cpu="lots"),
            make_pod("on-going", node="going"),
            make_pod("on-staying", node="staying"),
            make_pod("ds-on-going", node="going", owner_kind="DaemonSet"),
        ],
        NODES.name: [make_node("going"), make_node("staying")],
        PROVISIONERS.name: [make_provisioner("b"), make_provisioner("a"), make_provisioner("gone")],
        DAEMONSETS.name: list(daemonsets),
    }
    objects[PROVISIONERS.name][2]["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    state = state_of(objects)
    state.mark_for_deletion(["going"])
    return state


def test_provisionable_pods_are_pending_rescheduled_or_ignored_with_why() -> None:
    found = provisionable(world().snapshot())
    assert [p.key for p in found.pending] == ["default/pending"]
    assert [p.key for p in found.rescheduled] == ["default/on-going"]  # the DaemonSet pod stays
    assert [(p.key, why) for p, why in found.ignored] == [("default/bad", "the pod spec cannot be read")]


def test_provisioning_places_pending_then_rescheduled_pods_on_every_node_a_marked_one_keeping_its_pods() -> None:
    snap = world().snapshot()
    inp = provisioning_input(snap, provisionable(snap), {})
    assert [p.key for p in inp.pods] == ["default/pending", "default/on-going"]
    assert [p.name for p in inp.provisioners] == ["a", "b"]  # valid ones, by name; "gone" is being deleted
    # the marked node keeps the pod placed again: kube-scheduler counts it there until it is evicted
    # (the solve takes no room for it there and places it once: tests/controller/scheduling/test_topology.py)
    pods_on = {n.name: sorted(p.key for p in n.pods) for n in inp.nodes}
    assert pods_on == {"going": ["default/ds-on-going", "default/on-going"], "staying": ["default/on-staying"]}
    assert [n.name for n in inp.nodes if n.marked_for_deletion] == ["going"]


def test_without_instance_types_nothing_may_launch() -> None:
    snap = world().snapshot()
    inp = scheduling_input(snap, [], [snap.nodes["staying"].state_node()])
    assert inp.provisioners == [] and inp.instance_types == {} and [n.name for n in inp.nodes] == ["staying"]


def test_daemonsets_are_converted_once_until_one_changes() -> None:
    state = world(daemonsets=(daemonset("ds"),))
    first, second = state.snapshot(), state.snapshot()
    assert [p.requests["cpu"] for p in first.daemonset_pods] == [100]
    assert second.daemonset_pods is first.daemonset_pods
    state.replace(DAEMONSETS.name, [daemonset("ds", cpu="200m", rv="2")])
    assert [p.requests["cpu"] for p in state.snapshot().daemonset_pods] == [200]
    assert scheduling_input(state.snapshot(), [], []).daemonsets == state.snapshot().daemonset_pods


def test_a_pending_pod_nominated_to_a_node_counts_there_as_kube_scheduler_reserves_it() -> None:
    nominated = make_pod("nominated", cpu="1")
    nominated["status"]["nominatedNodeName"] = "staying"
    elsewhere = make_pod("to-a-node-that-is-gone")
    elsewhere["status"]["nominatedNodeName"] = "gone"
    state = state_of({PODS.name: [make_pod("pending"), nominated, elsewhere], NODES.name: [make_node("staying")]})
    snap = state.snapshot()
    found = provisionable(snap)
    assert [p.key for p in found.pending] == ["default/pending"]  # a nominated pod waits for kube-scheduler
    (node,) = provisioning_input(snap, found, {}).nodes
    assert [p.key for p in node.pods] == ["default/nominated"]
