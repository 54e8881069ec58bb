"""Spread, pod affinity and anti-affinity (`controller/scheduling/topology.py`, spec §5.7).

Checked through `schedule()`, pod by pod. The small catalog offers every type on demand in
test-zone-a/b/c; domains are tried in name order, so the first zone chosen is test-zone-a.
"""

from __future__ import annotations

from typing import Any

from controller.core.labels import CAPACITY_TYPE, HOSTNAME, ZONE
from controller.core.requirements import Requirements
from controller.scheduling.topology import Group, filter_matches, short_key
from controller.scheduling.types import LabelSelector, PodRequest, StateNode
from tests.builders.scheduling import (
    make_instance_type,
    make_node,
    make_pod,
    make_provisioner,
    node_of,
    placements,
    reason,
    req,
    run,
    spread,
    term,
    zone_of,
)

WEB = {"app": "web"}


def web(name: str, **kwargs: Any) -> PodRequest:
    return make_pod(name, labels=WEB, **kwargs)


def test_zonal_spread_fills_zones_in_turn() -> None:
    pods = [web(f"w{i}", spread=[spread(ZONE, WEB)]) for i in range(4)]
    result = run(pods)
    assert [zone_of(result, f"w{i}") for i in range(4)] == ["test-zone-a", "test-zone-b", "test-zone-c", "test-zone-a"]
    # the fourth pod joins the oldest node with the fewest pods, in zone a
    assert node_of(result, "w3") == node_of(result, "w0")


def test_existing_pods_count_towards_spread() -> None:
    existing = make_node("n1", zone="test-zone-a", bound=[web("old", node_name="n1")])
    result = run([web("w", spread=[spread(ZONE, WEB)])], nodes=[existing])
    assert zone_of(result, "w") == "test-zone-b"


def test_hostname_spread_puts_one_matching_pod_per_node() -> None:
    pods = [web(f"w{i}", spread=[spread(HOSTNAME, WEB)]) for i in range(3)]
    result = run(pods)
    assert len({node_of(result, f"w{i}") for i in range(3)}) == 3


def test_capacity_type_spread_uses_both_capacity_types() -> None:
    types = [make_instance_type("m.large", price=0.10, spot_price=0.04)]
    provisioner = make_provisioner(requirements=[req(CAPACITY_TYPE, "In", "spot", "on-demand")])
    pods = [web(f"w{i}", spread=[spread(CAPACITY_TYPE, WEB)]) for i in range(2)]
    result = run(pods, [provisioner], types)
    assert sorted(n.launch.capacity_type for n in result.new_nodes if n.launch) == ["on-demand", "spot"]


def test_min_domains_counts_missing_domains_as_empty() -> None:
    provisioner = make_provisioner(requirements=[req(ZONE, "In", "test-zone-a")])
    strict = spread(ZONE, WEB) | {"minDomains": 3}
    result = run([web("w0", spread=[strict]), web("w1", spread=[strict])], [provisioner])
    assert zone_of(result, "w0") == "test-zone-a"
    assert reason(result, "w1") == "topology spread on zone: maxSkew 1 would be exceeded"
    # without minDomains the single zone is the minimum, so both fit there
    relaxed = run([web("w0", spread=[spread(ZONE, WEB)]), web("w1", spread=[spread(ZONE, WEB)])], [provisioner])
    assert placements(relaxed).keys() == {"default/w0", "default/w1"}


def test_schedule_anyway_is_relaxed_when_it_cannot_be_met() -> None:
    provisioner = make_provisioner(requirements=[req(ZONE, "In", "test-zone-a")])
    soft = spread(ZONE, WEB, when="ScheduleAnyway") | {"minDomains": 3}
    result = run([web("w0", spread=[soft]), web("w1", spread=[soft])], [provisioner])
    assert not result.unschedulable


def test_pod_affinity_follows_the_target_zone() -> None:
    db = make_pod("db", cpu="1", labels={"app": "db"}, node_selector={ZONE: "test-zone-b"})
    client = make_pod("client", affinity=[term(ZONE, {"app": "db"})])
    result = run([client, db])
    assert zone_of(result, "client") == "test-zone-b"


def test_pod_affinity_without_a_target_is_unschedulable() -> None:
    result = run([make_pod("client", affinity=[term(ZONE, {"app": "db"})])])
    assert reason(result, "client") == "pod affinity on zone: no zone allowed for the pod has a pod matching app=db"


def test_self_affinity_on_hostname_packs_one_node() -> None:
    cache = {"app": "cache"}
    pods = [make_pod(f"c{i}", labels=cache, affinity=[term(HOSTNAME, cache)]) for i in range(3)]
    result = run(pods)
    assert len({node_of(result, f"c{i}") for i in range(3)}) == 1


def test_anti_affinity_on_hostname_spreads_nodes() -> None:
    solo = {"app": "solo"}
    pods = [make_pod(f"s{i}", labels=solo, anti_affinity=[term(HOSTNAME, solo)]) for i in range(3)]
    result = run(pods)
    assert len({node_of(result, f"s{i}") for i in range(3)}) == 3


def test_zonal_anti_affinity_blocks_every_zone_a_node_could_be_in() -> None:
    x = {"app": "x"}
    result = run([make_pod(f"x{i}", labels=x, anti_affinity=[term(ZONE, x)]) for i in range(2)])
    node_of(result, "x0")
    assert reason(result, "x1") == "pod anti-affinity on zone: every allowed zone already has a pod matching app=x"
    pinned = [
        make_pod(f"x{i}", labels=x, anti_affinity=[term(ZONE, x)], node_selector={ZONE: zone})
        for i, zone in enumerate(("test-zone-a", "test-zone-b"))
    ]
    result = run(pinned)
    assert (zone_of(result, "x0"), zone_of(result, "x1")) == ("test-zone-a", "test-zone-b")


def test_bound_pods_with_anti_affinity_repel_new_pods() -> None:
    guard = make_pod("guard", node_name="n1", anti_affinity=[term(HOSTNAME, WEB)])
    existing = make_node("n1", bound=[guard])
    result = run([web("w"), make_pod("other")], nodes=[existing])
    assert node_of(result, "other") == "n1"
    assert node_of(result, "w") != "n1"


def test_unsatisfiable_preferred_anti_affinity_is_dropped() -> None:
    x = {"app": "x"}
    pods = [make_pod(f"x{i}", labels=x, preferred_anti_affinity=[(10, term(ZONE, x))]) for i in range(3)]
    assert not run(pods).unschedulable


def test_preferred_node_affinity_is_honoured_then_relaxed() -> None:
    likes_b = make_pod("b", preferred=[(10, [req(ZONE, "In", "test-zone-b")])])
    likes_mars = make_pod("m", preferred=[(10, [req(ZONE, "In", "mars")])])
    result = run([likes_b, likes_mars])
    assert zone_of(result, "b") == "test-zone-b"
    assert "default/m" in placements(result)


def test_required_terms_are_ored() -> None:
    pod = make_pod("p", required=[[req(ZONE, "In", "mars")], [req(ZONE, "In", "test-zone-c")]])
    assert zone_of(run([pod]), "p") == "test-zone-c"


def test_group_helpers() -> None:
    spec = ("spread", ZONE, frozenset({"ns"}), False, LabelSelector((("app", "web"),)), 1, None, (), False)
    group = Group(0, spec, ["b", "a"], 0)
    assert group.selects("ns", WEB) and not group.selects("other", WEB)
    group.add("c")
    assert group.domains() == ["a", "b", "c"] and group.counts["c"] == 1
    assert short_key(ZONE) == "zone" and short_key("rack") == "rack"
    node = Requirements.from_labels({ZONE: "a"})
    assert filter_matches((), node)
    assert not filter_matches((Requirements.from_labels({ZONE: "b"}),), node)


def test_a_zonal_spread_of_pods_with_a_node_selector_is_counted_not_a_crash() -> None:
    """A spread's node filter (the pod's node selector) is part of its group's identity; the
    filter's requirements are mappings, which once made the group lookup raise TypeError."""
    pods = [web(f"w{i}", spread=[spread(ZONE, WEB)], node_selector={CAPACITY_TYPE: "on-demand"}) for i in range(3)]
    result = run(pods)
    assert sorted(zone_of(result, f"w{i}") for i in range(3)) == ["test-zone-a", "test-zone-b", "test-zone-c"]


def test_pods_whose_node_selector_fixes_their_spread_domain_are_counted_first() -> None:
    """A pod karpy already pinned to a zone (younger and smaller than the others here) is placed
    before the pods still choosing, so they see it where it must go."""
    pinned = web("w-pinned", cpu="100m", spread=[spread(ZONE, WEB)], node_selector={ZONE: "test-zone-a"})
    pods = [web(f"w{i}", spread=[spread(ZONE, WEB)]) for i in range(2)]
    result = run([*pods, pinned])
    assert zone_of(result, "w-pinned") == "test-zone-a"
    assert sorted(zone_of(result, f"w{i}") for i in range(2)) == ["test-zone-b", "test-zone-c"]


def draining(*pods: PodRequest) -> StateNode:
    """A node of zone a being deleted, its pods still bound to it (and in the batch, to move)."""
    return make_node("going", zone="test-zone-a", deleting=True, bound=pods, created="2024-01-01T00:00:00Z")


def room(zone: str) -> StateNode:
    """A 4-CPU node with nothing on it, created after the draining node (a, b, c in name order)."""
    return make_node(f"room-{zone[-1]}", zone=zone, created="2024-01-02T00:00:00Z")


def full(zone: str, *bound: PodRequest) -> StateNode:
    """A 1-CPU node with 900m taken: a 500m pod does not fit."""
    name = f"full-{zone[-1]}"
    return make_node(name, zone=zone, cpu="1", bound=[web(f"on-{name}", cpu="900m", node_name=name), *bound])


def test_the_pods_still_on_a_node_being_deleted_count_there_for_a_pending_pod() -> None:
    """Issue 21: kube-scheduler counts a draining node's pods in its zone until they are evicted.
    Zone a holds two (on the draining node), b and c one each: the pending pod may go to b or c
    only, which are full — it needs a new node, not the room in zone a kube-scheduler refuses."""
    old = [web(f"old{i}", node_name="going", spread=[spread(ZONE, WEB)]) for i in range(2)]
    nodes = [draining(*old), make_node("room-a", zone="test-zone-a"), full("test-zone-b"), full("test-zone-c")]
    new = web("new", cpu="500m", spread=[spread(ZONE, WEB)])
    result = run([new, *old], nodes=nodes)
    assert zone_of(result, "new") in ("test-zone-b", "test-zone-c")
    assert node_of(result, "new") in {n.name for n in result.new_nodes}
    # the draining node's own pods then leave zone a one by one, as they are evicted
    assert not result.unschedulable


def test_the_pods_of_a_node_being_deleted_count_there_for_pending_pods_then_move_together() -> None:
    """Pending pods first, against the count with the draining node's pods where they are (a = 2:
    b then); then those pods leave zone a together (their node drains at once) and are placed as
    their replacements would be: an even spread at the end, each counted once (counted in zone a
    still, or placed one at a time while the other still counted there, it would not be)."""
    old = [web("old-big", cpu="300m", node_name="going", spread=[spread(ZONE, WEB)]),
           web("old-small", cpu="200m", node_name="going", spread=[spread(ZONE, WEB)])]  # fmt: skip
    nodes = [draining(*old), room("test-zone-a"), room("test-zone-b"), room("test-zone-c")]
    result = run([web("new", spread=[spread(ZONE, WEB)]), *old], nodes=nodes)
    assert [node_of(result, name) for name in ("new", "old-big", "old-small")] == ["room-b", "room-a", "room-c"]
    assert not result.new_nodes


def test_a_draining_pods_anti_affinity_repels_until_it_moves() -> None:
    """kube-scheduler honours a bound pod's required anti-affinity where the pod is: the guard on
    the draining node keeps web pods out of zone a until it moves (to zone c, its node selector);
    a web pod placed after it may then use zone a."""
    guard = make_pod("guard", cpu="300m", node_name="going", anti_affinity=[term(ZONE, WEB)],
                     node_selector={ZONE: "test-zone-c"})  # fmt: skip
    web_old = web("web-old", cpu="200m", node_name="going")
    nodes = [draining(guard, web_old), room("test-zone-a"), room("test-zone-b"), room("test-zone-c")]
    result = run([web("web-new"), guard, web_old], nodes=nodes)
    assert [node_of(result, name) for name in ("web-new", "guard", "web-old")] == ["room-b", "room-c", "room-a"]


def test_the_first_pod_of_a_zonal_self_affinity_goes_to_a_zone_an_anti_affine_pod_leaves_open() -> None:
    # kube-scheduler lets the first pod of a self-affine group go to any node its other
    # constraints allow: a bound pod repelling the group from test-zone-a leaves zones b and c
    zf, repel = {"app": "zf"}, term(ZONE, {"app": "zf"})
    guard = make_pod("zx", node_name="n1", labels={"app": "zx"}, anti_affinity=[repel])
    existing = make_node("n1", zone="test-zone-a", bound=[guard])
    pods = [make_pod(f"f{i}", labels=zf, affinity=[term(ZONE, zf)]) for i in range(2)]
    result = run(pods, nodes=[existing])
    assert not result.unschedulable
    assert zone_of(result, "f0") == zone_of(result, "f1") == "test-zone-b"


def test_the_first_pod_of_a_zonal_self_affinity_skips_a_zone_its_own_anti_affinity_excludes() -> None:
    # the pod's own anti-affinity (to pods already in test-zone-a) is met before its affinity picks
    zf = {"app": "zf"}
    other = make_pod("o", node_name="n1", labels={"app": "o"})
    existing = make_node("n1", zone="test-zone-a", bound=[other])
    pod = make_pod("f0", labels=zf, affinity=[term(ZONE, zf)], anti_affinity=[term(ZONE, {"app": "o"})])
    result = run([pod], nodes=[existing])
    assert zone_of(result, "f0") == "test-zone-b"


def test_a_self_affine_pod_kept_from_the_zone_of_its_group_is_not_the_first_of_it() -> None:
    # kube-scheduler opens a domain only while no pod of the group runs in any: one in zone a
    # leaves a pod that may not go there unschedulable, not the first of a new zone
    zf = {"app": "zf"}
    existing = make_node("n1", zone="test-zone-a", bound=[make_pod("f0", node_name="n1", labels=zf)])
    pod = make_pod("f1", labels=zf, affinity=[term(ZONE, zf)], node_selector={ZONE: "test-zone-b"})
    result = run([pod], nodes=[existing])
    assert reason(result, "f1") == "pod affinity on zone: no zone allowed for the pod has a pod matching app=zf"
