"""The independent placement checker itself: it must catch what kube-scheduler would refuse."""

from __future__ import annotations

from typing import Any

from tests.support import placement


def node(name: str, zone: str, hostname: bool = True) -> placement.Obj:
    labels = {"topology.kubernetes.io/zone": zone, **({"kubernetes.io/hostname": name} if hostname else {})}
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "10"}
    return {"metadata": {"name": name, "labels": labels}, "spec": {}, "status": {"allocatable": alloc}}


def pod(name: str, node_name: str = "", app: str = "a", **spec: Any) -> placement.Obj:
    containers = [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]
    return {"metadata": {"name": name, "namespace": "ns", "labels": {"app": app}},
            "spec": {"containers": containers, **({"nodeName": node_name} if node_name else {}), **spec}}  # fmt: skip


ANTI: dict[str, Any] = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "a"}}}]}}}  # fmt: skip
SPREAD: dict[str, Any] = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                         "whenUnsatisfiable": "DoNotSchedule",
                                         "labelSelector": {"matchLabels": {"app": "a"}}}]}  # fmt: skip


def test_anti_affinity_on_one_host_is_caught_both_ways() -> None:
    view = placement.ClusterView({"n1": node("n1", "a")}, {"ns/p1": pod("p1", "n1", **ANTI)})
    assert placement.placement_violations(pod("p2", **ANTI), "n1", view)
    assert placement.placement_violations(pod("p2"), "n1", view)  # p1's term repels it


def test_a_node_without_hostname_label_is_one_host_for_the_checker_none_for_kube_scheduler() -> None:
    nodes = {"n1": node("n1", "a", hostname=False)}
    pods = {"ns/p1": pod("p1", "n1", **ANTI)}
    assert placement.placement_violations(pod("p2", **ANTI), "n1", placement.ClusterView(nodes, pods))
    assert not placement.placement_violations(pod("p2", **ANTI), "n1", placement.ClusterView(nodes, pods, True))


def test_spread_is_judged_at_the_binding_instant_and_kube_schedulers_cache_may_lag() -> None:
    events = [
        placement.Event(1, "nodes", "ADDED", node("n1", "a"), seen=0.0),
        placement.Event(2, "pods", "MODIFIED", pod("p1", "n1", **SPREAD), seen=0.1),
        placement.Event(3, "nodes", "ADDED", node("n2", "b"), seen=0.2),
        placement.Event(4, "pods", "MODIFIED", pod("p2", "n1", **SPREAD), seen=0.3),
    ]
    (problem,) = placement.replay(events)
    assert "skew 2" in problem and "ns/p2" in problem
    assert placement.replay(events, lagging={"ns/p2"}) == []  # n2 may not have been in its cache yet
    assert placement.replay(events, lagging={"ns/p2"}, lag_seconds=0.05)  # but not for longer than allowed


def test_kube_scheduler_may_write_its_bindings_out_of_the_order_it_decided_them() -> None:
    # it decided p2 -> n3 (zone c) first, then p3 -> n1 (zone a), but wrote p3's binding first
    events = [
        placement.Event(1, "nodes", "ADDED", node("n1", "a"), seen=0.0),
        placement.Event(2, "nodes", "ADDED", node("n2", "b"), seen=0.0),
        placement.Event(3, "nodes", "ADDED", node("n3", "c"), seen=0.0),
        placement.Event(4, "pods", "MODIFIED", pod("p1", "n1", **SPREAD), seen=0.1),
        placement.Event(5, "pods", "MODIFIED", pod("p0", "n2", **SPREAD), seen=0.1),
        placement.Event(6, "pods", "MODIFIED", pod("p3", "n1", **SPREAD), seen=1.5),
        placement.Event(7, "pods", "MODIFIED", pod("p2", "n3", **SPREAD), seen=1.6),
    ]
    (problem,) = placement.replay(events)
    assert "ns/p3" in problem and "skew 2" in problem
    assert placement.replay(events, lagging={"ns/p2", "ns/p3"}) == []
    assert placement.replay(events, lagging={"ns/p3"})  # only kube-scheduler's own bindings are assumed
    assert placement.replay(events, lagging={"ns/p2", "ns/p3"}, lag_seconds=0.05)  # and only shortly after


def test_resources_and_taints() -> None:
    full = placement.ClusterView({"n1": node("n1", "a")}, {f"ns/q{i}": pod(f"q{i}", "n1", app="q") for i in range(4)})
    assert any("cpu requests" in v for v in placement.placement_violations(pod("p"), "n1", full))
    tainted: dict[str, Any] = dict(node("n1", "a"))
    tainted["spec"] = {}
    tainted["spec"]["taints"] = [{"key": "agent", "effect": "NoSchedule"},
                                 {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]  # fmt: skip
    (problem,) = placement.placement_violations(pod("p"), "n1", placement.ClusterView({"n1": tainted}))
    assert "agent:NoSchedule" in problem


def claim(name: str, volume: str = "", namespace: str = "ns") -> placement.Obj:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"volumeName": volume} if volume else {},
            "status": {"phase": "Bound" if volume else "Pending"}}  # fmt: skip


def pv(name: str, zone: str = "", labels: dict[str, str] | None = None) -> placement.Obj:
    spec: dict[str, Any] = {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": name}}
    if zone:
        term = {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def mounting(name: str, node_name: str, *claims: str) -> placement.Obj:
    volumes = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    return pod(name, node_name, volumes=volumes)


def test_volume_binding_zone_and_limits() -> None:
    nodes = [node("n1", "a"), node("n2", "b")]
    vols = placement.Volumes.of(
        [claim("in-a", "pv-a"), claim("also-a", "pv-a2"), claim("labelled", "pv-l"), claim("later")],
        [pv("pv-a", "a"), pv("pv-a2", "a"), pv("pv-l", labels={"topology.kubernetes.io/zone": "b__c"})],
        [{"metadata": {"name": "n1"}, "spec": {"drivers": [{"name": "ebs.csi.aws.com", "allocatable": {"count": 1}}]}}],
    )
    assert (
        placement.volume_violations(nodes, [mounting("p", "n1", "in-a"), mounting("q", "n2", "labelled")], vols) == []
    )
    wrong = placement.volume_violations(nodes, [mounting("p", "n2", "in-a"), mounting("q", "n1", "labelled")], vols)
    assert len(wrong) == 2 and all("does not allow the node" in w for w in wrong)
    assert "is not Bound" in placement.volume_violations(nodes, [mounting("p", "n1", "later")], vols)[0]
    assert "does not exist" in placement.volume_violations(nodes, [mounting("p", "n1", "gone")], vols)[0]
    over = placement.volume_violations(nodes, [mounting("p", "n1", "in-a"), mounting("q", "n1", "also-a")], vols)
    assert over == ["n1: 2 ebs.csi.aws.com volumes attached, its CSINode allows 1"]
    shared = [mounting("p", "n1", "in-a"), mounting("q", "n1", "in-a")]
    assert placement.volume_violations(nodes, shared, vols) == []  # one claim, one attachment


def test_a_gated_pod_cannot_be_bound() -> None:
    view = placement.ClusterView({"n1": node("n1", "a")}, {})
    gated = pod("p1", schedulingGates=[{"name": "karpy.sh/topology-spread"}])
    assert any("scheduling gates" in p for p in placement.placement_violations(gated, "n1", view))
    assert not placement.placement_violations(pod("p1"), "n1", view)


def test_end_state_spread_counts_every_allowed_zone_and_pinned_pending_pods() -> None:
    """Bindings each valid when only some zones had nodes can end skewed over every zone."""
    zone = "topology.kubernetes.io/zone"
    nodes = [node("n1", "a"), node("n2", "b")]
    two_in_a = [pod(f"p{i}", "n1", **SPREAD) for i in range(2)]
    pinned_b = pod("p9", nodeSelector={zone: "b"}, **SPREAD)  # pending, can only go to b
    (problem,) = placement.spread_skew_violations(nodes, two_in_a, zone, ["a", "b"])
    assert "{'a': 2, 'b': 0}" in problem
    assert not placement.spread_skew_violations(nodes, two_in_a[:1], zone, ["a", "b", "c"])
    assert not placement.spread_skew_violations(nodes, [*two_in_a, pinned_b], zone, ["a", "b"])
    (problem,) = placement.spread_skew_violations(nodes, [*two_in_a, pinned_b], zone, ["a", "b", "c"])
    assert "'c': 0" in problem  # the allowed zone without any node counts, empty
