"""The solve loop (`controller/scheduling/solver.py`, spec §5.3–5.5): where each pod goes."""

from __future__ import annotations

import dataclasses
import gc
import weakref

from controller.core.labels import ARCH, HOSTNAME, PROVISIONER_NAME
from controller.core.taints import Taint
from controller.scheduling.scheduler import schedule
from controller.scheduling.solver import Solver
from controller.scheduling.types import SchedulingInput, SchedulingSettings
from tests.builders.scheduling import (
    make_instance_type,
    make_node,
    make_pod,
    make_provisioner,
    new_node,
    node_of,
    placements,
    reason,
    run,
    small_catalog,
    spread,
    term,
)

GPU_TAINT = Taint("nvidia.com/gpu", "true", "NoSchedule")
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def test_existing_nodes_are_filled_first() -> None:
    result = run([make_pod("p", cpu="1")], nodes=[make_node("n1")])
    assert result.existing_assignments == {"n1": ("default/p",)}
    assert not result.new_nodes


def test_existing_nodes_in_creation_order_then_name() -> None:
    nodes = [make_node("n-a", created="2023-01-02T00:00:00Z"), make_node("n-b", created="2023-01-01T00:00:00Z")]
    assert node_of(run([make_pod("p")], nodes=nodes), "p") == "n-b"


def test_least_allocated_puts_a_pod_on_the_node_with_the_most_room_left_as_kube_scheduler_scores() -> None:
    # n-old is older (first fit takes it) but a quarter used; n-new is bigger and empty
    old = make_node("n-old", cpu="4", memory="16Gi", created="2023-01-01T00:00:00Z",
                    bound=[make_pod("busy", cpu="1", memory="4Gi", node_name="n-old")])  # fmt: skip
    new = make_node("n-new", cpu="8", memory="32Gi", created="2023-01-02T00:00:00Z")
    pods = [make_pod("p", cpu="1", memory="1Gi")]
    inp = SchedulingInput(pods, [make_provisioner()], small_catalog(), nodes=[old, new])
    assert schedule(inp).existing_assignments == {"n-old": ("default/p",)}
    spread_out = dataclasses.replace(inp, settings=SchedulingSettings(least_allocated=True))
    assert schedule(spread_out).existing_assignments == {"n-new": ("default/p",)}
    # equal room left: the first in creation order, as without it
    twin = make_node("n-twin", cpu="4", memory="16Gi", created="2023-01-03T00:00:00Z",
                     bound=[make_pod("busy2", cpu="1", memory="4Gi", node_name="n-twin")])  # fmt: skip
    tie = dataclasses.replace(spread_out, nodes=[twin, old])
    assert schedule(tie).existing_assignments == {"n-old": ("default/p",)}


def test_least_allocated_sends_a_replicasets_pod_where_fewest_pods_like_it_run() -> None:
    # kube-scheduler's default spread (weight 2) outweighs room: "roomy" holds four pods like it
    like = [make_pod(f"x{i}", cpu="1", memory="1Gi", labels={"app": "x"}, owner_kind="ReplicaSet", node_name="roomy")
            for i in range(4)]  # fmt: skip
    roomy = make_node("roomy", cpu="16", memory="64Gi", created="2023-01-01T00:00:00Z", bound=like)
    other = [make_pod("y", cpu="2", memory="8Gi", labels={"app": "y"}, owner_kind="ReplicaSet", node_name="tight")]
    tight = make_node("tight", cpu="4", memory="16Gi", created="2023-01-02T00:00:00Z", bound=other)
    pod = make_pod("p", cpu="1", memory="1Gi", labels={"app": "x"}, owner_kind="ReplicaSet")
    settings = SchedulingSettings(least_allocated=True)
    inp = SchedulingInput([pod], [make_provisioner()], small_catalog(), nodes=[roomy, tight], settings=settings)
    assert schedule(inp).existing_assignments == {"tight": ("default/p",)}
    # a pod with a spread of its own is scored by room alone (the defaults do not apply to it)
    spread_own = make_pod("q", cpu="1", memory="1Gi", labels={"app": "x"}, owner_kind="ReplicaSet",
                          spread=[spread(ARCH, {"app": "x"}, max_skew=5)])  # fmt: skip
    assert schedule(dataclasses.replace(inp, pods=[spread_own])).existing_assignments == {"roomy": ("default/q",)}


def test_full_existing_nodes_are_skipped() -> None:
    busy = make_node("n1", cpu="1", bound=[make_pod("old", cpu="900m", node_name="n1")])
    assert node_of(run([make_pod("p", cpu="200m")], nodes=[busy]), "p") == "default-1"


def test_nodes_karpenter_does_not_own_or_is_deleting_are_not_used() -> None:
    foreign = make_node("foreign", provisioner=None)
    leaving = make_node("leaving", deleting=True, bound=[make_pod("evicted", node_name="leaving")])
    evicted = make_pod("evicted", node_name="leaving")
    result = run([make_pod("p"), evicted], nodes=[foreign, leaving])
    assert node_of(result, "p") == node_of(result, "evicted") == "default-1"


def test_startup_taints_are_ignored_until_the_node_is_initialized() -> None:
    init = Taint("init", "true", "NoSchedule")
    provisioner = make_provisioner(startup_taints=[init])
    not_ready = Taint("node.kubernetes.io/not-ready", "", "NoSchedule")
    fresh = make_node("fresh", taints=[init, not_ready], initialized=False)
    assert node_of(run([make_pod("p")], [provisioner], nodes=[fresh]), "p") == "fresh"
    ready = make_node("ready", taints=[init], initialized=True)
    assert node_of(run([make_pod("p")], [provisioner], nodes=[ready]), "p") == "default-1"


def test_in_flight_nodes_take_pods_fewest_pods_first() -> None:
    solo = {"app": "solo"}
    pods = [make_pod(f"s{i}", cpu="1", labels=solo, anti_affinity=[term(HOSTNAME, solo)]) for i in range(2)]
    pods += [make_pod("g0"), make_pod("g1")]
    result = run(pods)
    assert [node_of(result, p) for p in ("s0", "s1", "g0", "g1")] == [
        "default-1",
        "default-2",
        "default-1",
        "default-2",
    ]


def test_pods_are_queued_by_cpu_then_memory() -> None:
    result = run([make_pod("small", cpu="100m"), make_pod("big", cpu="7", memory="1Gi"),
                  make_pod("fat", cpu="7", memory="20Gi")])  # fmt: skip
    # the fat pod opens the first node, the big one cannot join it and opens the second; the small
    # one fits both, which hold one pod each, and joins the older
    assert (node_of(result, "fat"), node_of(result, "big"), node_of(result, "small")) == (
        "default-1",
        "default-2",
        "default-1",
    )


def test_weight_then_name_decides_the_provisioner() -> None:
    provisioners = [make_provisioner("low", weight=1), make_provisioner("high", weight=50)]
    assert node_of(run([make_pod("p")], provisioners), "p") == "high-1"
    assert node_of(run([make_pod("p")], [make_provisioner("b"), make_provisioner("a")]), "p") == "a-1"


def test_provisioner_name_selector() -> None:
    pod = make_pod("p", node_selector={PROVISIONER_NAME: "b"})
    assert node_of(run([pod], [make_provisioner("a"), make_provisioner("b")]), "p") == "b-1"


def test_taints_must_be_tolerated_and_startup_taints_need_not() -> None:
    provisioners = [
        make_provisioner("gpu", weight=100, taints=[GPU_TAINT]),
        make_provisioner("plain", startup_taints=[Taint("cilium", "true", "NoExecute")]),
    ]
    trainer = make_pod("trainer", cpu="2", tolerations=[GPU_TOLERATION])
    late = make_pod("late", tolerations=[GPU_TOLERATION])
    second = make_pod("second", cpu="2", tolerations=[GPU_TOLERATION])
    result = run([make_pod("web", cpu="1"), trainer, second, late], provisioners)
    assert node_of(result, "trainer") == node_of(result, "second") == "gpu-1"
    assert node_of(result, "web") == "plain-1"
    # weight is only a preference: a tolerant pod joins the in-flight node with fewer pods
    assert node_of(result, "late") == "plain-1"
    assert new_node(result, "plain-1").startup_taints == (Taint("cilium", "true", "NoExecute"),)


def test_limits_are_never_exceeded_within_a_batch() -> None:
    provisioner = make_provisioner(limits={"cpu": "4"})
    result = run([make_pod(f"p{i}", cpu="1500m") for i in range(3)], [provisioner])
    assert len(result.new_nodes) == 1
    node = result.new_nodes[0]
    assert max(it.capacity["cpu"] for it in node.instance_type_options) <= 4000
    assert reason(result, "p2") == "provisioner 'default' limits would be exceeded (cpu: 0 of 4 left)"


def test_limits_count_existing_nodes() -> None:
    provisioner = make_provisioner(limits={"cpu": "6"})
    existing = make_node("n1", cpu="4", bound=[make_pod("old", cpu="4", node_name="n1")])
    result = run([make_pod("p", cpu="1")], [provisioner], nodes=[existing])
    assert {it.capacity["cpu"] for it in result.new_nodes[0].instance_type_options} == {2000}


def test_daemonset_overhead_is_reserved_on_new_nodes() -> None:
    daemon = make_pod("agent", cpu="1", owner_kind="DaemonSet", tolerations=[{"operator": "Exists"}])
    picky = make_pod("arm-agent", cpu="3", owner_kind="DaemonSet", node_selector={ARCH: "arm64"})
    tainted = make_provisioner(taints=[GPU_TAINT])
    result = run([make_pod("p", cpu="1500m", tolerations=[GPU_TOLERATION])], [tainted], daemonsets=[daemon, picky])
    node = result.new_nodes[0]
    # the picky daemon does not tolerate the provisioner's taint, so only 1 cpu of overhead
    assert node.daemon_requests["cpu"] == 1000
    assert node.requests["cpu"] == 2500
    assert all(it.capacity["cpu"] >= 4000 for it in node.instance_type_options)


def test_daemon_pods_already_on_a_node_are_not_counted_twice() -> None:
    daemon = make_pod("agent", cpu="1", owner_kind="DaemonSet")
    running = make_pod("agent-x", cpu="1", owner_kind="DaemonSet", node_name="n1")
    node = make_node("n1", cpu="2", bound=[running])
    assert node_of(run([make_pod("p", cpu="1")], nodes=[node], daemonsets=[daemon]), "p") == "n1"
    empty = make_node("n1", cpu="2")
    assert node_of(run([make_pod("p", cpu="1500m")], nodes=[empty], daemonsets=[daemon]), "p") == "default-1"


def test_host_ports_conflict() -> None:
    result = run([make_pod("a", host_port=8080), make_pod("b", host_port=8080), make_pod("c", host_port=9090)])
    assert node_of(result, "a") != node_of(result, "b")
    assert node_of(result, "c") == node_of(result, "a")


def test_gpus_and_pod_capacity() -> None:
    result = run([make_pod("trainer", gpus=1)])
    assert new_node(result, node_of(result, "trainer")).launch.instance_type.name == "g.2xlarge"
    only_small = [make_instance_type("s.large", cpu=16, memory_gib=64, pods=10)]
    result = run([make_pod(f"p{i}") for i in range(12)], types=only_small)
    assert len(result.new_nodes) == 2


def test_identical_unschedulable_pods_each_get_a_reason() -> None:
    result = run([make_pod(f"huge{i}", cpu="100") for i in range(5)])
    assert len(result.unschedulable) == 5
    assert len(set(result.unschedulable.values())) == 1


def test_the_same_input_gives_the_same_answer() -> None:
    pods = [make_pod(f"p{i}", cpu=f"{100 * (i % 7 + 1)}m", labels={"app": "web"}) for i in range(40)]
    first, second = run(pods), run(pods)
    assert placements(first) == placements(second)
    launches = [[(n.name, str(n.launch)) for n in r.new_nodes] for r in (first, second)]
    assert launches[0] == launches[1]


def test_an_in_flight_node_uses_its_instance_types_expected_allocatable() -> None:
    launching = make_node("launching", instance_type="m.xlarge", cpu="0", memory="0", pods=0, initialized=False)
    assert node_of(run([make_pod("p", cpu="3")], nodes=[launching]), "p") == "launching"


def test_a_solve_is_freed_as_soon_as_it_is_dropped() -> None:
    # no reference cycle through the solver: its per-pod state goes with it, without waiting for
    # (and slowing down) the garbage collector's passes
    web = {"app": "web"}
    pods = [make_pod(f"w{i}", labels=web, spread=[spread("topology.kubernetes.io/zone", web)]) for i in range(6)]
    inp = SchedulingInput(pods=pods, provisioners=[make_provisioner()], instance_types=[make_instance_type()])
    gc.disable()
    try:
        solver = Solver(inp)
        solver.solve()
        dropped = weakref.ref(solver)
        del solver
        assert dropped() is None
    finally:
        gc.enable()


def test_a_node_reused_across_solves_counts_its_pods_as_each_solve_sees_them() -> None:
    """The same StateNode in several solves (a deprovisioning pass's simulations): its bound pods'
    usage is kept between solves, and recomputed when one of them is in the batch being placed."""
    bound = dataclasses.replace(make_pod("big", cpu="3"), node_name="n1")
    node = make_node("n1", cpu="4", bound=[bound])
    first = run([make_pod("q", cpu="1")], nodes=[node])
    assert node_of(first, "default/q") == "n1"  # 3 of 4 cpu taken: 1 left
    second = run([make_pod("r", cpu="2")], nodes=[node])
    assert node_of(second, "default/r") != "n1"  # still 3 of 4 taken (kept between solves)
    moved = run([dataclasses.replace(bound, node_name=""), make_pod("s", cpu="1")], nodes=[node])
    assert node_of(moved, "default/big") == "n1" and node_of(moved, "default/s") == "n1"  # big is placed again
