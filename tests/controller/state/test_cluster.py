"""Cluster state: views, in-flight nodes, bindings, marking, synced()."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.clock import FakeClock
from controller.kube.resources import CLAIMS, CSINODES, NODES, PODS, PROVISIONERS, STORAGECLASSES, VOLUMES, WATCHED
from controller.state.cluster import ClusterState
from tests.builders.volumes import claim, csinode, storage_class, volume, zone_affinity
from tests.builders.wire import make_node, make_pod, make_provisioner
from tests.fakes.world import state_of


def synced_state(clock: FakeClock | None = None) -> ClusterState:
    return state_of(clock=clock)


def test_not_synced_until_every_kind_listed() -> None:
    state = ClusterState(FakeClock())
    for kind in WATCHED[:-1]:
        state.replace(kind.name, [])
    assert not state.synced()
    state.replace(WATCHED[-1].name, [])
    assert state.synced() and state.snapshot().synced
    state.unsynced(PODS.name)
    assert not state.snapshot().synced


def test_pending_pods_follow_the_decisions_table() -> None:
    state = synced_state()
    pods = [
        make_pod("pending"),
        make_pod("bound", node="n1"),
        make_pod("daemon", owner_kind="DaemonSet"),
        make_pod("done", phase="Failed"),
        make_pod("never-tried", pending=False),
    ]
    deleting = make_pod("deleting")
    deleting["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:01Z"
    state.replace(PODS.name, [*pods, deleting])
    assert [p.name for p in state.snapshot().pending_pods()] == ["pending"]


def test_queued_pods_are_those_kube_scheduler_has_not_tried_as_state_keeps_them() -> None:
    state = synced_state()
    other = make_pod("other-scheduler", pending=False, schedulerName="my-scheduler")
    state.replace(PODS.name, [make_pod("pending"), make_pod("bound", node="n1"), make_pod("never-tried", pending=False),
                              other])  # fmt: skip
    assert [p.name for p in state.snapshot().queued_pods()] == ["never-tried"]


def test_pending_pods_oldest_first_or_unordered_are_the_same_pods() -> None:
    state = synced_state()
    young, old, older = make_pod("a-young"), make_pod("b-old"), make_pod("c-older")
    young["metadata"]["creationTimestamp"] = "2024-01-01T00:00:09Z"
    old["metadata"]["creationTimestamp"] = "2024-01-01T00:00:05Z"
    older["metadata"]["creationTimestamp"] = "2024-01-01T00:00:01Z"
    state.replace(PODS.name, [young, old, older, make_pod("bound", node="n1")])
    snap = state.snapshot()
    assert [p.name for p in snap.pending_pods()] == ["c-older", "b-old", "a-young"]
    assert {p.name for p in snap.pending_pods(ordered=False)} == {"c-older", "b-old", "a-young"}


def test_pods_are_attached_to_nodes_and_usage_counts_capacity() -> None:
    state = synced_state()
    state.replace(NODES.name, [make_node("n1", cpu="4"), make_node("n2", cpu="2", deleting=True)])
    state.replace(PODS.name, [make_pod("a", node="n1"), make_pod("b", node="n1")])
    snap = state.snapshot()
    assert [p.name for p in snap.nodes["n1"].pods] == ["a", "b"]
    assert snap.nodes["n2"].marked_for_deletion
    assert snap.provisioner_usage("default")["cpu"] == 4000


def test_in_flight_nodes_and_recorded_bindings_show_before_the_watch() -> None:
    clock = FakeClock()
    state = synced_state(clock)
    state.replace(PODS.name, [make_pod("a")])
    state.record_node(make_node("new"))
    state.record_binding("default/a", "new")
    snap = state.snapshot()
    assert snap.nodes["new"].in_flight
    assert [p.name for p in snap.nodes["new"].pods] == ["a"]
    assert snap.pending_pods() == []
    clock.step(31)
    assert [p.name for p in state.snapshot().pending_pods()] == ["a"]  # binding never confirmed


def test_watch_event_replaces_in_flight_node() -> None:
    state = synced_state()
    state.record_node(make_node("new"))
    state.apply(NODES.name, "ADDED", make_node("new"))
    assert not state.snapshot().nodes["new"].in_flight
    state.apply(NODES.name, "DELETED", make_node("new"))
    assert "new" not in state.snapshot().nodes


def test_mark_for_deletion_and_nomination() -> None:
    clock = FakeClock()
    state = synced_state(clock)
    state.replace(NODES.name, [make_node("n1")])
    state.mark_for_deletion(["n1"])
    state.nominate(["n1"], clock.now() + 20)
    snap = state.snapshot()
    assert snap.nodes["n1"].marked_for_deletion and snap.nodes["n1"].nominated
    state.unmark_for_deletion(["n1"])
    clock.step(21)
    snap = state.snapshot()
    assert not snap.nodes["n1"].marked_for_deletion and not snap.nodes["n1"].nominated


def test_provisioner_view_loads_or_reports_error() -> None:
    state = synced_state()
    bad = make_provisioner("bad", weight=500)
    state.replace(PROVISIONERS.name, [make_provisioner("default", limits={"resources": {"cpu": "10"}}), bad])
    snap = state.snapshot()
    assert snap.provisioners["default"].spec is not None
    assert snap.provisioners["default"].spec.limits == {"cpu": 10000}
    assert snap.provisioners["bad"].spec is None and "weight" in snap.provisioners["bad"].error


def _pod_version(name: str, node: str, version: int) -> dict[str, Any]:
    pod = make_pod(name, node=node)
    pod["metadata"]["resourceVersion"] = str(version)
    return pod


def _layout(state: ClusterState) -> tuple[dict[str, str], dict[str, list[str]]]:
    snap = state.snapshot()
    return (
        {key: pod.node_name for key, pod in snap.pods.items()},
        {name: [p.key for p in node.pods] for name, node in snap.nodes.items()},
    )


def test_pods_follow_their_watch_events_between_nodes() -> None:
    state = synced_state()
    state.replace(NODES.name, [make_node("n1"), make_node("n2")])
    state.replace(PODS.name, [_pod_version("a", "", 1), _pod_version("b", "n1", 1)])
    assert _layout(state)[1] == {"n1": ["default/b"], "n2": []}
    state.apply(PODS.name, "MODIFIED", _pod_version("a", "n2", 2))
    state.apply(PODS.name, "MODIFIED", _pod_version("b", "n2", 2))
    assert _layout(state)[1] == {"n1": [], "n2": ["default/a", "default/b"]}
    state.apply(PODS.name, "DELETED", _pod_version("a", "n2", 3))
    assert _layout(state) == ({"default/b": "n2"}, {"n1": [], "n2": ["default/b"]})
    state.replace(PODS.name, [_pod_version("c", "n1", 4)])  # a re-list drops what it lacks
    assert _layout(state) == ({"default/c": "n1"}, {"n1": ["default/c"], "n2": []})


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["ADDED", "MODIFIED", "DELETED", "RELIST", "BIND", "SNAPSHOT"]),
            st.sampled_from(["a", "b", "c", "d"]),
            st.sampled_from(["", "n1", "n2", "gone"]),
        ),
        max_size=40,
    )
)
def test_snapshots_between_events_place_every_pod_where_its_object_says(events: list[tuple[str, str, str]]) -> None:
    """Whatever the order of watch events, re-lists, recorded bindings and snapshots, each node of
    a snapshot lists exactly the snapshot's pods bound to it, and each pod is where its last
    object puts it (or, while unbound, on the node karpy recorded binding it to)."""
    state = synced_state()
    state.replace(NODES.name, [make_node("n1"), make_node("n2")])
    objects: dict[str, dict[str, Any]] = {}
    bindings: dict[str, str] = {}

    def check() -> None:
        snap = state.snapshot()
        assert set(snap.pods) == {f"default/{name}" for name in objects}
        for name, obj in objects.items():
            node = obj["spec"].get("nodeName", "")
            placed = snap.pods[f"default/{name}"].node_name
            assert placed == node or (not node and placed == bindings.get(f"default/{name}"))
        for name, view in snap.nodes.items():
            assert [p.key for p in view.pods] == sorted(k for k, p in snap.pods.items() if p.node_name == name)
        assert snap.unbound is not None  # indexed as the pods change, not found by a walk
        assert sorted(p.key for p in snap.unbound) == sorted(k for k, p in snap.pods.items() if not p.node_name)
        assert all(snap.pods[p.key] is p for p in snap.unbound)

    for version, (event, name, node) in enumerate(events, start=2):
        if event == "SNAPSHOT":
            check()
        elif event == "BIND":
            if node:
                state.record_binding(f"default/{name}", node)
                bindings[f"default/{name}"] = node
        elif event == "RELIST":
            state.replace(PODS.name, list(objects.values()))
        elif event == "DELETED":
            objects.pop(name, None)
            state.apply(PODS.name, event, _pod_version(name, node, version))
        else:
            objects[name] = _pod_version(name, node, version)
            state.apply(PODS.name, event, objects[name])
    check()


def test_the_state_keeps_objects_without_their_managed_fields() -> None:
    state = synced_state()
    listed, watched = make_pod("a"), make_pod("b")
    for pod in (listed, watched):
        pod["metadata"]["managedFields"] = [{"manager": "kube-scheduler", "fieldsV1": {"f:status": {}}}]
    state.replace(PODS.name, [listed])
    state.apply(PODS.name, "ADDED", watched)
    pods = state.snapshot().pods
    assert [p.obj["metadata"].get("managedFields") for p in pods.values()] == [None, None]
    assert pods["default/a"].obj["metadata"]["name"] == "a"
    assert "managedFields" in listed["metadata"]  # the caller's object is left as it was


def test_an_object_sent_again_at_the_same_resource_version_is_held_once() -> None:
    state = synced_state()
    pod, node = make_pod("a"), make_node("n")
    for obj, rv in ((pod, "5"), (node, "6")):
        obj["metadata"]["resourceVersion"] = rv
    state.replace(PODS.name, [pod])
    state.replace(NODES.name, [node])
    held_pod, held_node = state.snapshot().pods["default/a"].obj, state.snapshot().nodes["n"].obj
    state.replace(PODS.name, [copy.deepcopy(pod)])  # a re-list
    state.apply(NODES.name, "MODIFIED", copy.deepcopy(node))
    assert state.snapshot().pods["default/a"].obj is held_pod
    assert state.snapshot().nodes["n"].obj is held_node
    assert state.known(PODS.name, [copy.deepcopy(pod)]) == [held_pod] and state.known(PODS.name, [pod])[0] is held_pod
    changed = copy.deepcopy(pod)
    changed["metadata"].update(resourceVersion="7", labels={"v": "2"})
    state.replace(PODS.name, [changed])
    assert state.snapshot().pods["default/a"].labels == {"v": "2"}


def test_volume_objects_follow_their_watches() -> None:
    state = synced_state()
    assert state.snapshot().volumes.claims == {}
    state.replace(CLAIMS.name, [claim("data", volume="pv")])
    state.replace(VOLUMES.name, [volume("pv", terms=zone_affinity("zone-c"), claim_ref=("default", "data"))])
    state.replace(
        STORAGECLASSES.name, [storage_class(default=True), {"metadata": {"name": "bad"}, "allowedTopologies": 3}]
    )
    state.apply(CSINODES.name, "ADDED", csinode("n1", 25))
    vols = state.snapshot().volumes
    assert vols.claims["default/data"].volume_name == "pv"
    assert vols.volumes["pv"].terms[0][0].values == {"zone-c"}
    assert vols.default_class() == "standard"
    assert vols.classes["bad"].error  # unreadable: pods using it wait with the reason, nothing raises
    assert vols.node_limits == {"n1": {"ebs.csi.aws.com": 25}}
    assert state.snapshot().volumes is vols  # rebuilt only when one of those kinds changes
    state.apply(CLAIMS.name, "DELETED", claim("data"))
    assert state.snapshot().volumes.claims == {}


def _node_version(name: str, version: int, label: str = "") -> dict[str, Any]:
    node = make_node(name, labels={"example.com/v": label} if label else None)
    node["metadata"]["resourceVersion"] = str(version)
    return node


def test_a_snapshot_reuses_the_views_of_what_did_not_change() -> None:
    """Snapshots are taken several times a second at 20,000 pods: what did not change since the
    last one is handed out again (the pod map, each node's view with its scheduler state)."""
    state = synced_state()
    state.replace(NODES.name, [_node_version("n1", 1), _node_version("n2", 1)])
    state.replace(PODS.name, [_pod_version("a", "n1", 1), _pod_version("b", "n2", 1)])
    first = state.snapshot()
    second = state.snapshot()
    assert second.pods is first.pods
    assert all(second.nodes[n] is first.nodes[n] for n in ("n1", "n2"))
    assert second.nodes["n1"].state_node() is first.nodes["n1"].state_node()
    state.apply(PODS.name, "MODIFIED", _pod_version("a", "n2", 2))
    third = state.snapshot()
    assert third.pods is not first.pods and third.pods["default/a"].node_name == "n2"
    assert [p.name for p in third.nodes["n1"].pods] == [] and [p.name for p in third.nodes["n2"].pods] == ["a", "b"]
    assert [p.name for p in first.nodes["n1"].state_node().pods] == ["a"]  # the earlier one is unchanged


def test_a_snapshot_never_changes_afterwards() -> None:
    clock = FakeClock()
    state = synced_state(clock)
    state.replace(NODES.name, [_node_version("n1", 1)])
    state.replace(PODS.name, [_pod_version("a", "", 1)])
    before = state.snapshot()
    state.record_binding("default/a", "n1")
    state.mark_for_deletion(["n1"])
    state.nominate(["n1"], clock.now() + 20)
    after = state.snapshot()
    assert after.pods["default/a"].node_name == "n1" and [p.name for p in after.nodes["n1"].pods] == ["a"]
    assert after.nodes["n1"].marked_for_deletion and after.nodes["n1"].nominated
    assert before.pods["default/a"].node_name == "" and before.nodes["n1"].pods == ()
    assert not before.nodes["n1"].marked_for_deletion and not before.nodes["n1"].nominated
    assert state.snapshot().pods["default/a"].node_name == "n1"  # the binding is shown again, not kept in the map


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["POD", "NODE", "MARK", "UNMARK", "NOMINATE", "INFLIGHT", "STEP", "SNAPSHOT"]),
            st.sampled_from(["n1", "n2", "n3"]),
            st.sampled_from(["", "n1", "n2", "n3"]),
        ),
        max_size=40,
    )
)
def test_snapshots_show_every_change_of_nodes_marks_and_nominations(events: list[tuple[str, str, str]]) -> None:
    """Whatever changes between snapshots — a node's object, its pods, marks, nominations that
    lapse, in-flight nodes — each snapshot's node views say what a state fed afresh says."""
    clock = FakeClock()
    state = synced_state(clock)
    nodes = {"n1": _node_version("n1", 1), "n2": _node_version("n2", 1)}
    pods: dict[str, dict[str, Any]] = {}
    state.replace(NODES.name, list(nodes.values()))
    marked: set[str] = set()
    nominated: dict[str, float] = {}
    in_flight: dict[str, float] = {}

    def check() -> None:
        snap = state.snapshot()
        fresh_state = synced_state(FakeClock(clock.now()))
        fresh_state.replace(NODES.name, copy.deepcopy(list(nodes.values())))
        fresh_state.replace(PODS.name, copy.deepcopy(list(pods.values())))
        fresh = fresh_state.snapshot()
        live = {n for n, when in in_flight.items() if n not in nodes and clock.now() - when <= 120}
        marked.intersection_update({*nodes, *live})  # a mark of a node that is gone is forgotten
        assert set(snap.nodes) == set(fresh.nodes) | live
        for name, view in snap.nodes.items():
            assert view.in_flight == (name in live)
            assert view.marked_for_deletion == (name in marked)
            assert view.nominated == (nominated.get(name, 0.0) > clock.now())
            on = sorted(f"default/{o['metadata']['name']}" for o in pods.values() if o["spec"].get("nodeName") == name)
            assert [p.key for p in view.pods] == on
            assert view.state_node().pods == tuple(p.request for p in view.pods if p.request is not None)
            if name in fresh.nodes:
                assert view.labels == fresh.nodes[name].labels

    for version, (event, name, target) in enumerate(events, start=2):
        if event == "SNAPSHOT":
            check()
        elif event == "POD":  # pod "p-<name>" moves to `target` ("" unbinds it)
            pods[name] = _pod_version(f"p-{name}", target, version)
            state.apply(PODS.name, "MODIFIED", pods[name])
        elif event == "NODE":  # a node's object changes (or appears)
            nodes[name] = _node_version(name, version, label=str(version))
            state.apply(NODES.name, "MODIFIED", nodes[name])
        elif event == "MARK":
            marked.add(name)
            state.mark_for_deletion([name])
        elif event == "UNMARK":
            marked.discard(name)
            state.unmark_for_deletion([name])
        elif event == "NOMINATE":
            nominated[name] = max(nominated.get(name, 0.0), clock.now() + 20)
            state.nominate([name], clock.now() + 20)
        elif event == "INFLIGHT" and name not in nodes:
            in_flight[name] = clock.now()
            state.record_node(_node_version(name, version))
        elif event == "STEP":
            clock.step(15)
    check()


def test_recorded_bindings_are_overlaid_once_until_they_or_the_pods_change() -> None:
    """After a pass binds hundreds of pods, every snapshot until the watch reports them shows them
    bound: the same overlay (pod map, node views) while the bindings and pods are the same."""
    clock = FakeClock()
    state = synced_state(clock)
    state.replace(NODES.name, [_node_version("n1", 1), _node_version("n2", 1)])
    state.replace(PODS.name, [_pod_version("a", "", 1), _pod_version("b", "", 1)])
    state.record_binding("default/a", "n1")
    first = state.snapshot()
    second = state.snapshot()
    assert second.pods is first.pods and second.nodes["n1"] is first.nodes["n1"]
    assert [p.name for p in second.nodes["n1"].pods] == ["a"] and [p.name for p in second.unbound or ()] == ["b"]
    state.record_binding("default/b", "n1")
    third = state.snapshot()
    assert [p.name for p in third.nodes["n1"].pods] == ["a", "b"] and third.unbound == ()
    assert third.pods["default/a"] is first.pods["default/a"]  # a's bound view is made once
    state.apply(PODS.name, "MODIFIED", _pod_version("a", "n1", 2))  # the watch reports a's binding
    fourth = state.snapshot()
    assert fourth.pods["default/a"].obj["metadata"]["resourceVersion"] == "2"
    assert [p.name for p in fourth.nodes["n1"].pods] == ["a", "b"]
    clock.step(31)  # b's binding never confirmed
    fifth = state.snapshot()
    assert [p.name for p in fifth.nodes["n1"].pods] == ["a"] and [p.name for p in fifth.unbound or ()] == ["b"]
