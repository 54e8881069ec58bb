"""Provisioning: batching, launch, Node object, binding, limits, failed launches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from controller.cloudprovider.aws.ratelimit import Buckets
from controller.cloudprovider.batcher import Window
from controller.cloudprovider.errors import InsufficientCapacityError
from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.cloudprovider.simulated.provider import SimulatedCloudProvider
from controller.core import labels as L
from controller.core.labels import DEPROVISIONING_CORDON
from controller.core.timestamps import format_timestamp
from controller.decisions import LAUNCHED, UNSCHEDULABLE, WAITING
from controller.kube.errors import KubeError
from controller.kube.resources import CLAIMS, NODES, PODS, PROVISIONERS, STORAGECLASSES, VOLUMES
from controller.provisioning.controller import (
    FAILED_SCHEDULING_EVENTS_PER_PASS,
    RETAIN_SECONDS,
    ProvisioningController,
    ProvisioningPass,
    ProvisioningSettings,
)
from tests.builders.volumes import claim, storage_class, volume, zone_affinity
from tests.builders.wire import make_node, make_pod, make_provisioner
from tests.fakes.world import World

TYPES = tuple(it for it in simulated_catalog() if it.name in {"m5.large", "m5.xlarge", "m5.2xlarge", "c5.large"})


class Env(World):
    """The shared test world (`tests/fakes/world.py`) with a provisioning controller on it."""

    controller: ProvisioningController

    def run_batch(self) -> object:
        self.sync()
        return self.run_batch_unsynced()

    def run_batch_unsynced(self) -> object:
        """A batch over cluster state as last synced (what the API holds now may differ)."""
        assert self.controller.reconcile() is None  # opens the window
        self.clock.step(1.1)
        return self.controller.reconcile()


def make_env(bind: bool = True, **provisioner: object) -> Env:
    world = World.make(TYPES)
    env = Env(world.clock, world.kube, world.cloud, world.state, world.recorder, world.decisions)
    env.controller = ProvisioningController(
        env.state, env.kube, env.cloud, env.clock, env.recorder, env.decisions, ProvisioningSettings(bind_pods=bind)
    )
    spec = {
        "labels": {"team": "a"},
        "taints": [{"key": "dedicated", "value": "a", "effect": "NoSchedule"}],
        "startupTaints": [{"key": "init", "effect": "NoSchedule"}],
        **provisioner,
    }
    env.put(PROVISIONERS, make_provisioner("default", **spec))
    return env


TOLERATE = [{"key": "dedicated", "operator": "Exists"}]


def counted(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_pending_pods_get_a_node_with_the_provisioners_shape_and_are_bound() -> None:
    env = make_env()
    created = {"reason": "provisioning", "provisioner": "default"}
    before = [counted(n, **created) for n in ("karpenter_nodes_created", "karpenter_machines_created")]
    launched = counted("karpenter_machines_launched", provisioner="default")
    simulations = counted("karpenter_provisioner_scheduling_simulation_duration_seconds_count")
    for i in range(3):
        tolerations = [*TOLERATE, {"key": "init", "operator": "Exists"}]
        env.kube.put(PODS, make_pod(f"p{i}", cpu="500m", tolerations=tolerations))
    env.run_batch()
    (node,) = env.kube.items(NODES)
    labels, spec = node["metadata"]["labels"], node["spec"]
    assert labels["team"] == "a" and labels[L.PROVISIONER_NAME] == "default"
    assert {L.INSTANCE_TYPE, L.ZONE, L.CAPACITY_TYPE, L.ARCH, L.OS, L.INSTANCE_CPU} <= set(labels)
    assert {(t["key"], t["effect"]) for t in spec["taints"]} == {("dedicated", "NoSchedule"), ("init", "NoSchedule")}
    assert node["metadata"]["finalizers"] == [L.TERMINATION_FINALIZER]
    assert spec["providerID"].startswith("fake:///")
    assert node["status"]["allocatable"]["cpu"]
    assert node["metadata"]["labels"][L.HOSTNAME] == node["metadata"]["name"]
    assert sorted(p for p, _ in env.kube.bindings) == ["default/p0", "default/p1", "default/p2"]
    after = [counted(n, **created) for n in ("karpenter_nodes_created", "karpenter_machines_created")]
    assert after == [b + 1 for b in before]
    assert counted("karpenter_machines_launched", provisioner="default") == launched + 1
    assert counted("karpenter_provisioner_scheduling_simulation_duration_seconds_count") == simulations + 1


def test_pods_that_do_not_tolerate_a_startup_taint_are_left_to_kube_scheduler() -> None:
    env = make_env()
    env.kube.put(PODS, make_pod("p0", tolerations=TOLERATE))
    env.run_batch()
    (node,) = env.kube.items(NODES)
    assert {t["key"] for t in node["spec"]["taints"]} == {"dedicated", "init"}
    assert env.kube.bindings == []  # kube-scheduler binds it once the startup taint is removed
    assert "unschedulable" not in node["spec"]


def test_while_kube_scheduler_has_pods_to_decide_a_window_closes_at_its_maximum() -> None:
    env = make_env()
    env.kube.put(PODS, make_pod("p0", tolerations=TOLERATE))
    env.kube.put(PODS, make_pod("untried", tolerations=TOLERATE, pending=False))  # not decided yet
    env.sync()
    assert env.controller.reconcile() is None
    env.clock.step(1.1)
    assert env.controller.reconcile() is None and env.cloud.create_calls == []  # idle, but more are coming
    env.clock.step(9.0)
    assert isinstance(env.controller.reconcile(), ProvisioningPass)


def test_window_waits_for_idle() -> None:
    env = make_env()
    env.kube.put(PODS, make_pod("p0", tolerations=TOLERATE))
    env.sync()
    assert env.controller.reconcile() is None
    env.clock.step(0.5)
    assert env.controller.reconcile() is None
    assert env.cloud.create_calls == []


def test_a_new_pod_opens_the_window_a_still_pending_one_again_after_the_retry_and_gone_ones_are_forgotten() -> None:
    env = make_env()
    env.kube.put(PODS, make_pod("never-fits", cpu="1000", tolerations=TOLERATE))
    env.run_batch()  # nothing fits: the pod stays pending
    assert not env.controller.batcher.open
    env.clock.step(5)
    env.controller.reconcile()
    assert not env.controller.batcher.open  # its retry is not due yet
    env.clock.step(5)
    env.controller.reconcile()
    assert env.controller.batcher.open  # 10 s after its last try: a new window
    env.clock.step(1.1)
    env.controller.reconcile()  # the window closes: evaluated again
    env.kube.put(PODS, make_pod("fits", tolerations=TOLERATE))
    env.sync()
    env.controller.reconcile()
    assert env.controller.batcher.open  # a pod seen for the first time
    env.kube.delete(PODS, "never-fits", "default")
    env.kube.delete(PODS, "fits", "default")
    env.sync()
    env.controller.reconcile()
    assert env.controller._last_try == {}


def test_a_pod_pinned_and_waiting_for_kube_scheduler_opens_no_window() -> None:
    env = make_env()
    pinned = make_pod(
        "pinned", pending=False, tolerations=TOLERATE, nodeSelector={L.ZONE: "us-west-2a"},
        topologySpreadConstraints=[{
            "maxSkew": 1, "topologyKey": L.ZONE, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }],
    )  # fmt: skip
    env.kube.put(PODS, pinned)
    env.sync()
    assert [p.name for p in env.state.snapshot().pending_pods()] == ["pinned"]  # considered by a batch
    for _ in range(3):
        env.controller.reconcile()
        assert not env.controller.batcher.open
        env.clock.step(10)


def test_binding_left_to_kube_scheduler_by_setting() -> None:
    env = make_env(bind=False)
    env.kube.put(PODS, make_pod("p0", tolerations=TOLERATE))
    env.run_batch()
    assert len(env.kube.items(NODES)) == 1 and env.kube.bindings == []


def test_failed_launch_leaves_nothing_and_pods_get_a_reason_then_retry() -> None:
    env = make_env()
    env.kube.put(PODS, make_pod("p0", tolerations=TOLERATE))
    env.cloud.next_create_error = InsufficientCapacityError("no capacity")
    env.run_batch()
    assert env.kube.items(NODES) == [] and env.cloud.instances == {}
    assert any(e["reason"] == "FailedScheduling" and "no capacity" in e["message"] for e in env.kube.events)
    env.clock.step(10)
    env.run_batch()
    assert len(env.kube.items(NODES)) == 1


def test_limits_are_never_exceeded() -> None:
    env = make_env(limits={"resources": {"cpu": "4"}})
    for i in range(12):
        env.kube.put(PODS, make_pod(f"p{i}", cpu="900m", tolerations=TOLERATE))
    env.run_batch()
    total = sum(int(n["status"]["capacity"]["cpu"]) for n in env.kube.items(NODES))
    assert 0 < total <= 4
    assert any(e["reason"] == "FailedScheduling" for e in env.kube.events)
    # the decision on a pod left pending names the limit as values, not only in its text
    stopped = [d for d in env.controller.decisions.recent() if d.action == "unschedulable"]
    assert (
        stopped
        and all(d.extra["clauses"] for d in stopped)
        and all(
            c["provisioners"] == ["default"] and c["stages"] == ["limits"] for d in stopped for c in d.extra["clauses"]
        )
    )


def test_untolerated_taint_means_no_launch() -> None:
    env = make_env()
    env.kube.put(PODS, make_pod("p0"))
    env.run_batch()
    assert env.cloud.create_calls == []


@pytest.mark.parametrize("kind", ["bound", "daemonset"])
def test_pods_not_considered(kind: str) -> None:
    env = make_env()
    pod = make_pod("p0", node="n1") if kind == "bound" else make_pod("p0", owner_kind="DaemonSet")
    env.kube.put(PODS, pod)
    env.run_batch()
    assert env.cloud.create_calls == []


def test_node_is_held_cordoned_while_binding_then_released() -> None:
    env = make_env()
    env.kube.put(PODS, make_pod("p0", tolerations=TOLERATE))
    env.run_batch()
    (node,) = env.kube.items(NODES)
    created = [c for c in env.kube.calls if c[0] == "create" and c[1][0] == "nodes"]
    assert created
    assert "unschedulable" not in node["spec"] and "karpy.sh/binding-hold" not in node["metadata"]["annotations"]
    patches = [c[1][3] for c in env.kube.calls if c[0] == "patch" and c[1][0] == "nodes"]
    assert patches and patches[-1]["spec"] == {"unschedulable": None}


def test_hold_left_by_a_killed_controller_is_released_after_30s() -> None:
    env = make_env()
    held = make_node("held")
    held["spec"]["unschedulable"] = True
    held["metadata"]["annotations"] = {"karpy.sh/binding-hold": "true"}
    held["metadata"]["creationTimestamp"] = "2023-11-14T22:13:00Z"  # a few seconds before the FakeClock's start
    env.kube.put(NODES, held)
    env.sync()
    env.controller.reconcile()
    assert "unschedulable" in env.kube.items(NODES)[0]["spec"]
    env.clock.step(31)
    env.controller.reconcile()
    assert "unschedulable" not in env.kube.items(NODES)[0]["spec"]


def test_a_stale_hold_on_a_node_deprovisioning_cordoned_meanwhile_keeps_the_cordon() -> None:
    env = make_env()
    held = make_node("held")
    held["spec"]["unschedulable"] = True
    held["metadata"]["annotations"] = {"karpy.sh/binding-hold": "true", DEPROVISIONING_CORDON: "true"}
    held["metadata"]["creationTimestamp"] = "2023-11-14T22:13:00Z"
    env.kube.put(NODES, held)
    env.sync()
    env.clock.step(31)
    env.controller.reconcile()
    (node,) = env.kube.items(NODES)
    assert node["spec"]["unschedulable"] is True  # deprovisioning's cordon: deprovisioning lifts it
    assert node["metadata"]["annotations"] == {DEPROVISIONING_CORDON: "true"}


def test_the_pods_of_every_new_node_of_a_batch_are_bound_then_every_node_released() -> None:
    env = make_env(startupTaints=[])
    for i in range(4):
        env.kube.put(PODS, make_pod(f"p{i}", cpu="3", tolerations=TOLERATE))
    outcome = env.run_batch()
    nodes = env.kube.items(NODES)
    assert len(nodes) == 2
    assert sorted(outcome.bound) == ["default/p0", "default/p1", "default/p2", "default/p3"]  # type: ignore[attr-defined]
    assert {node for _, node in env.kube.bindings} == {n["metadata"]["name"] for n in nodes}
    for node in nodes:
        assert "unschedulable" not in node["spec"] and L.BINDING_HOLD not in node["metadata"].get("annotations", {})


def test_a_pod_with_a_claim_to_bind_gets_a_node_in_its_volumes_zone_but_is_left_to_kube_scheduler() -> None:
    """The issue's case: a static WaitForFirstConsumer volume in us-west-2c. karpy launches there,
    releases the node (kube-scheduler binds the pod and the claim) and, while the pod still waits,
    nominates that node instead of launching another."""
    env = make_env(startupTaints=[])
    env.kube.put(STORAGECLASSES, storage_class("local", provisioner="kubernetes.io/no-provisioner"))
    env.kube.put(VOLUMES, volume("pv", storage_class="local", terms=zone_affinity("us-west-2c")))
    env.kube.put(CLAIMS, claim("data", storage_class="local"))
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    env.kube.put(PODS, make_pod("db-0", tolerations=TOLERATE, volumes=volumes))
    env.run_batch()
    (node,) = env.kube.items(NODES)
    assert node["metadata"]["labels"][L.ZONE] == "us-west-2c"
    assert env.kube.bindings == []
    assert "unschedulable" not in node["spec"] and L.BINDING_HOLD not in node["metadata"]["annotations"]
    env.clock.step(10)
    env.run_batch()
    assert len(env.kube.items(NODES)) == 1 and env.kube.bindings == []


def test_a_pod_whose_claim_is_missing_waits_with_the_reason_and_nothing_is_launched() -> None:
    env = make_env()
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "nowhere"}}]
    env.kube.put(PODS, make_pod("db-0", tolerations=TOLERATE, volumes=volumes))
    env.run_batch()
    assert env.kube.items(NODES) == [] and env.cloud.create_calls == []
    assert any(
        e["reason"] == "FailedScheduling" and "persistentvolumeclaim default/nowhere not found" in e["message"]
        for e in env.kube.events
    )


# -- karpy's topology gate (issue 17; spreadpin.py) ----------------------------------------------

ZONE_SPREAD = [{"maxSkew": 1, "topologyKey": L.ZONE, "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "s"}}}]  # fmt: skip


def gated_pod(name: str, cpu: str = "500m", **spec: Any) -> dict[str, Any]:
    pod = make_pod(name, cpu=cpu, labels={"app": "s"}, pending=False, tolerations=TOLERATE,
                   topologySpreadConstraints=ZONE_SPREAD, **spec)  # fmt: skip
    pod["spec"]["schedulingGates"] = [{"name": L.TOPOLOGY_GATE}]
    return pod


def test_gated_spread_pods_get_nodes_in_every_zone_and_are_released_pinned_not_bound() -> None:
    env = make_env()
    for i in range(3):
        env.kube.put(PODS, gated_pod(f"s{i}"))
    env.run_batch()
    zones = {n["metadata"]["name"]: n["metadata"]["labels"][L.ZONE] for n in env.kube.items(NODES)}
    assert sorted(zones.values()) == ["us-west-2a", "us-west-2b", "us-west-2c"]
    pods = env.kube.items(PODS)
    assert all("schedulingGates" not in p["spec"] for p in pods)
    assert sorted(p["spec"]["nodeSelector"][L.ZONE] for p in pods) == sorted(zones.values())
    assert env.kube.bindings == []  # the startup taint: kube-scheduler binds each within its zone once it goes


def test_a_gated_pod_planned_onto_an_existing_node_is_pinned_to_its_zone() -> None:
    env = make_env()
    env.kube.put(NODES, make_node("existing", cpu="4", labels={L.ZONE: "us-west-2b"}))
    env.kube.put(PODS, gated_pod("s0"))
    env.run_batch()
    assert [n["metadata"]["name"] for n in env.kube.items(NODES)] == ["existing"]
    (pod,) = env.kube.items(PODS)
    assert pod["spec"]["nodeSelector"] == {L.ZONE: "us-west-2b"} and "schedulingGates" not in pod["spec"]


def test_gated_pods_keep_their_gate_until_a_member_that_escaped_it_is_placed_then_even_it_out() -> None:
    """The 5,000-pod harness with karpy's webhooks: pods created while the webhook failed open are
    placed by kube-scheduler wherever the pods bound at that instant allow; gated pods pinned
    before that are not made up for. They wait for it, then are pinned counting where it went."""
    env = make_env()
    escaped = make_pod("e0", labels={"app": "s"}, tolerations=TOLERATE, topologySpreadConstraints=ZONE_SPREAD)
    for pod in (escaped, gated_pod("g1"), gated_pod("g2")):
        pod["metadata"]["creationTimestamp"] = format_timestamp(env.clock.now())
        env.kube.put(PODS, pod)
    env.run_batch()
    pods = {p["metadata"]["name"]: p for p in env.kube.items(PODS)}
    for name in ("g1", "g2"):
        assert pods[name]["spec"]["schedulingGates"] == [{"name": L.TOPOLOGY_GATE}], name
        assert "nodeSelector" not in pods[name]["spec"]
        evaluation = env.decisions.evaluation(f"pod/default/{name}")
        assert evaluation is not None and evaluation.decision.action == WAITING
        assert "default/e0" in evaluation.decision.reason
    (node,) = env.kube.items(NODES)  # capacity for the escaped pod only
    zone = node["metadata"]["labels"][L.ZONE]
    # kube-scheduler binds it (karpy leaves an unpinned zonal-spread pod to it)
    bound = env.kube.get(PODS, "e0", "default")
    bound["spec"]["nodeName"] = node["metadata"]["name"]
    bound["status"] = {"phase": "Running"}
    env.kube.put(PODS, bound)
    env.run_batch()
    pins = sorted(p["spec"]["nodeSelector"][L.ZONE] for p in env.kube.items(PODS) if p["metadata"]["name"] != "e0")
    assert zone not in pins and len(set(pins)) == 2, (zone, pins)  # one a zone: 1 / 1 / 1
    assert all("schedulingGates" not in p["spec"] for p in env.kube.items(PODS))


def test_a_gated_pod_karpy_ignores_is_released_to_kube_scheduler_without_a_pin() -> None:
    env = make_env()
    env.kube.put(PODS, gated_pod("s0", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                                     "nodeSelectorTerms": [{"matchExpressions": [
                                         {"key": L.PROVISIONER_NAME, "operator": "DoesNotExist"}]}]}}}))  # fmt: skip
    env.run_batch()
    (pod,) = env.kube.items(PODS)
    assert "schedulingGates" not in pod["spec"] and "nodeSelector" not in pod["spec"]
    assert env.kube.items(NODES) == []


def test_a_pod_that_fits_behind_10000_that_never_fit_is_placed_in_the_first_pass() -> None:
    """Issue 21 (kubernetes-sigs/karpenter#3152): every pending pod is considered in every pass, so
    thousands that never fit — too big for any type, or selecting a label no provisioner gives —
    do not keep a small pod from its node; each of them gets its evaluation, and the pass writes a
    bounded number of FailedScheduling events (the others' turn comes in later passes)."""
    env = make_env()
    for i in range(5_000):
        env.kube.put(PODS, make_pod(f"huge{i}", cpu="1000", tolerations=TOLERATE))
        env.kube.put(PODS, make_pod(f"nowhere{i}", cpu="100m", tolerations=TOLERATE, nodeSelector={"zone-x": str(i)}))
    env.kube.put(PODS, make_pod("small", cpu="100m", tolerations=[*TOLERATE, {"key": "init", "operator": "Exists"}]))
    outcome = env.run_batch()
    assert isinstance(outcome, ProvisioningPass)
    assert outcome.bound == ["default/small"] and len(outcome.launched) == 1
    assert len(outcome.unschedulable) == 10_000
    first = env.clock.now()
    decisions = env.controller.decisions
    small = decisions.evaluation("pod/default/small")
    assert small is not None and small.decision.action == LAUNCHED and small.decision.time == first
    for key in ("default/huge17", "default/nowhere4242"):
        found = decisions.evaluation(f"pod/{key}")
        assert found is not None and found.decision.action == UNSCHEDULABLE and found.decision.time == first
    failed = [e for e in env.kube.events if e["reason"] == "FailedScheduling"]
    assert len(failed) == FAILED_SCHEDULING_EVENTS_PER_PASS

    env.clock.step(10)  # the retry is due: the same pods, evaluated again, the next ones told
    env.run_batch()
    again = decisions.evaluation("pod/default/huge17")
    assert again is not None and again.decision.time == env.clock.now() and again.since == first
    told = {e["involvedObject"]["name"] for e in env.kube.events if e["reason"] == "FailedScheduling"}
    assert len(told) == 2 * FAILED_SCHEDULING_EVENTS_PER_PASS


def test_the_evaluations_of_pods_that_are_gone_are_forgotten() -> None:
    env = make_env()
    env.kube.put(PODS, make_pod("huge", cpu="1000", tolerations=TOLERATE))
    env.run_batch()
    assert env.controller.decisions.evaluation("pod/default/huge") is not None
    env.kube.delete(PODS, "huge", "default")
    env.sync()
    env.clock.step(RETAIN_SECONDS)  # gone pods are forgotten every RETAIN_SECONDS, not every tick
    env.controller.reconcile()
    assert env.controller.decisions.evaluation("pod/default/huge") is None


def test_a_throttled_launch_defers_the_rest_of_the_pass_and_every_pod_is_launched_once_the_cloud_answers(
    tmp_path: Path,
) -> None:
    env = make_env(startupTaints=[])
    limits = Buckets({"create_fleet": (1.0, 2.0)}, describe=None)  # 2 launches at once, then 1 a second
    cloud = SimulatedCloudProvider(tmp_path / "cloud.db", env.clock, catalog=TYPES, node_label="", api_limits=limits)
    one_at_a_time = ProvisioningSettings(launch_workers=1)  # no two launches share a CreateFleet
    env.controller = ProvisioningController(
        env.state, env.kube, cloud, env.clock, env.recorder, env.decisions, one_at_a_time
    )
    for i in range(5):
        env.kube.put(PODS, make_pod(f"p{i}", cpu="5", tolerations=TOLERATE))  # one m5.2xlarge each
    first = env.run_batch()
    assert isinstance(first, ProvisioningPass)
    assert len(first.launched) == 2 and first.failed == {} and len(first.deferred) == 3
    assert all("RequestLimitExceeded" in why for why in first.deferred.values())
    assert cloud.calls["create_fleet"] == 3 and cloud.throttled == {"create_fleet": 1}  # one refusal, then no call
    assert not any(e["reason"] == "FailedScheduling" for e in env.kube.events)
    evaluations = [env.decisions.evaluation(f"pod/{key}") for key in first.deferred]
    assert all(e is not None and e.decision.action == WAITING for e in evaluations)
    for _ in range(10):
        if len(env.kube.items(NODES)) == 5:
            break
        env.run_batch()
    assert len(env.kube.items(NODES)) == 5
    assert len(cloud.list()) == 5  # one instance per node: nothing leaked, nothing launched twice
    assert sorted(p for p, _ in env.kube.bindings) == [f"default/p{i}" for i in range(5)]  # each bound once
    assert not any(e["reason"] == "FailedScheduling" for e in env.kube.events)


def test_the_identical_launches_of_a_pass_share_one_create_fleet_and_each_gets_its_own_node(tmp_path: Path) -> None:
    env = make_env(startupTaints=[])
    limits = Buckets({"create_fleet": (1.0, 1.0)}, describe=None)  # one call now, the next in a second
    window = Window(idle=5.0, max_wait=10.0, max_items=6)  # closes when all six are in, however slow the machine
    cloud = SimulatedCloudProvider(
        tmp_path / "cloud.db", env.clock, catalog=TYPES, node_label="", api_limits=limits, fleet_window=window
    )
    env.controller = ProvisioningController(env.state, env.kube, cloud, env.clock, env.recorder, env.decisions)
    batches = counted("karpenter_cloudprovider_batcher_batch_size_sum", batcher="create_fleet")
    for i in range(6):
        env.kube.put(PODS, make_pod(f"p{i}", cpu="5", tolerations=TOLERATE))  # one m5.2xlarge each
    done = env.run_batch()
    assert isinstance(done, ProvisioningPass)
    assert len(done.launched) == 6 and done.deferred == {} and done.failed == {}
    assert cloud.calls == {"create_fleet": 1} and cloud.throttled == {}  # six launches, one call, no refusal
    assert len({i.provider_id for i in cloud.list()}) == 6 and len(env.kube.items(NODES)) == 6
    assert sorted(p for p, _ in env.kube.bindings) == [f"default/p{i}" for i in range(6)]
    assert counted("karpenter_cloudprovider_batcher_batch_size_sum", batcher="create_fleet") - batches == 6


def test_launches_of_different_shapes_are_separate_calls_and_a_throttled_one_waits_alone(tmp_path: Path) -> None:
    env = make_env(startupTaints=[])
    limits = Buckets({"create_fleet": (1.0, 1.0)}, describe=None)
    window = Window(idle=5.0, max_wait=10.0, max_items=2)  # each shape's batch closes with its two launches
    cloud = SimulatedCloudProvider(
        tmp_path / "cloud.db", env.clock, catalog=TYPES, node_label="", api_limits=limits, fleet_window=window
    )
    env.controller = ProvisioningController(env.state, env.kube, cloud, env.clock, env.recorder, env.decisions)
    for i in range(2):
        for name, zone in (("big", "us-west-2a"), ("small", "us-west-2b")):  # never on one node
            selector = {L.ZONE: zone}
            env.kube.put(PODS, make_pod(f"{name}{i}", cpu="5", tolerations=TOLERATE, nodeSelector=selector))
    first = env.run_batch()
    assert isinstance(first, ProvisioningPass)
    # two zones, two CreateFleet requests: one gets the bucket's token and both its nodes, the
    # other is refused (its one call) and its two pods wait
    assert len(first.launched) == 2 and len(first.deferred) == 2 and first.failed == {}
    assert cloud.throttled == {"create_fleet": 1} and cloud.calls["create_fleet"] == 2
    assert {k.split("/")[1].rstrip("01") for k in first.deferred} in ({"big"}, {"small"})
    for _ in range(10):
        if len(env.kube.items(NODES)) == 4:
            break
        env.run_batch()
    assert len(cloud.list()) == 4 and len(env.kube.items(NODES)) == 4  # nothing leaked, nothing twice
    assert sorted(p for p, _ in env.kube.bindings) == sorted(
        [f"default/big{i}" for i in range(2)] + [f"default/small{i}" for i in range(2)]
    )


def test_identical_launches_reach_the_cloud_together_however_the_plan_orders_them(tmp_path: Path) -> None:
    env = make_env(startupTaints=[])
    window = Window(idle=0.5, max_wait=2.0, max_items=2)  # a batch closes with two launches
    cloud = SimulatedCloudProvider(
        tmp_path / "cloud.db", env.clock, catalog=TYPES, node_label="", api_limits=None, fleet_window=window
    )
    two_at_a_time = ProvisioningSettings(launch_workers=2)
    env.controller = ProvisioningController(
        env.state, env.kube, cloud, env.clock, env.recorder, env.decisions, two_at_a_time
    )
    for i in range(3):  # largest first, the zones alternate: a 5.0, b 4.9, a 4.8, b 4.7, …
        for j, zone in enumerate(("us-west-2a", "us-west-2b")):
            cpu = f"{5000 - 100 * (2 * i + j)}m"  # one m5.2xlarge each: two requests, by zone
            env.kube.put(PODS, make_pod(f"p{2 * i + j}", cpu=cpu, tolerations=TOLERATE, nodeSelector={L.ZONE: zone}))
    done = env.run_batch()
    assert isinstance(done, ProvisioningPass)
    assert len(done.launched) == 6 and done.failed == {} and done.deferred == {}
    # two launches at a time, identical ones side by side: (a, a), (a | b), (b, b) — not six
    # calls of one launch each, as the plan's alternating order would make
    assert cloud.calls == {"create_fleet": 4}
    assert len(cloud.list()) == 6 and len(env.kube.items(NODES)) == 6


# -- nominations for kube-scheduler (issue 21; nominations.py) -----------------------------------


def nomination(env: Env, pod: str) -> str:
    return str(env.kube.get(PODS, pod, "default")["status"].get("nominatedNodeName") or "")


def test_a_pinned_spread_pod_is_bound_by_karpy_on_its_new_node() -> None:
    """Gated, placed, pinned to the new node's zone (issue 17): kube-scheduler counts its spread
    over that zone alone (bindcheck.single_domain), so karpy binds it like any other pod."""
    env = make_env(startupTaints=[])
    env.kube.put(PODS, gated_pod("s0"))
    outcome = env.run_batch()
    assert isinstance(outcome, ProvisioningPass) and outcome.nominated == {}
    (node,) = env.kube.items(NODES)
    assert env.kube.bindings == [("default/s0", node["metadata"]["name"])]
    assert env.kube.get(PODS, "s0", "default")["spec"]["nodeSelector"] == {L.ZONE: node["metadata"]["labels"][L.ZONE]}


def test_a_spread_pod_karpy_does_not_bind_is_nominated_to_its_new_node_just_before_the_release() -> None:
    """Gated, placed, pinned to the new node's zone (issue 17), left to kube-scheduler (its spread
    counts every zone: `nodeAffinityPolicy: Ignore`) and told where it is expected."""
    env = make_env(startupTaints=[])
    ignoring = [{**ZONE_SPREAD[0], "nodeAffinityPolicy": "Ignore"}]
    pod = make_pod("s0", labels={"app": "s"}, pending=False, tolerations=TOLERATE, topologySpreadConstraints=ignoring)
    pod["spec"]["schedulingGates"] = [{"name": L.TOPOLOGY_GATE}]
    env.kube.put(PODS, pod)
    env.kube.put(PODS, make_pod("plain", cpu="500m", tolerations=TOLERATE))
    outcome = env.run_batch()
    assert isinstance(outcome, ProvisioningPass)
    (node,) = [n["metadata"]["name"] for n in env.kube.items(NODES)]
    assert env.kube.bindings == [("default/plain", node)]  # bound by karpy: nothing to nominate
    assert nomination(env, "s0") == node and nomination(env, "plain") == ""
    assert outcome.nominated == {"default/s0": node}
    writes = [(c[1][0], c[1][2]) for c in env.kube.calls if c[0] == "patch"]
    assert writes.index(("pods", "status")) < writes.index(("nodes", None))  # nominated, then uncordoned


def test_a_pod_with_a_spread_not_pinned_is_left_to_kube_scheduler_without_a_nomination() -> None:
    env = make_env(startupTaints=[])
    spread = make_pod("s0", labels={"app": "s"}, tolerations=TOLERATE, topologySpreadConstraints=ZONE_SPREAD)
    env.kube.put(PODS, spread)
    outcome = env.run_batch()
    assert isinstance(outcome, ProvisioningPass) and outcome.nominated == {}
    assert len(env.kube.items(NODES)) == 1 and env.kube.bindings == [] and nomination(env, "s0") == ""


def test_a_nominated_pod_is_not_provisioned_for_again_and_its_room_stays_its_own() -> None:
    env = make_env(startupTaints=[])
    env.kube.put(PODS, gated_pod("s0", cpu="1500m"))
    env.run_batch()
    (node,) = env.kube.items(NODES)
    env.kube.put(PODS, make_pod("later", cpu="1500m", tolerations=TOLERATE))  # would fit in s0's room
    env.clock.step(10)
    env.run_batch()
    assert len(env.kube.items(NODES)) == 2  # s0 waits for kube-scheduler: `later` gets a node of its own
    assert ("default/later", node["metadata"]["name"]) not in env.kube.bindings


def test_a_pod_that_does_not_tolerate_a_startup_taint_is_nominated_to_its_node() -> None:
    env = make_env()
    env.kube.put(PODS, make_pod("p0", tolerations=TOLERATE))
    env.run_batch()
    (node,) = env.kube.items(NODES)
    assert nomination(env, "p0") == node["metadata"]["name"]


def test_a_pod_planned_onto_an_existing_node_is_nominated_there() -> None:
    env = make_env()
    env.kube.put(NODES, make_node("existing", cpu="4"))
    env.kube.put(PODS, make_pod("p0", tolerations=TOLERATE))
    env.run_batch()
    assert [n["metadata"]["name"] for n in env.kube.items(NODES)] == ["existing"]
    assert nomination(env, "p0") == "existing" and env.kube.bindings == []


def test_with_binding_off_every_planned_pod_is_nominated_to_its_new_node() -> None:
    env = make_env(bind=False, startupTaints=[])
    env.kube.put(PODS, make_pod("p0", tolerations=TOLERATE))
    env.run_batch()
    (node,) = env.kube.items(NODES)
    assert "unschedulable" not in node["spec"] and nomination(env, "p0") == node["metadata"]["name"]


def test_a_nomination_is_written_whatever_kube_scheduler_wrote_to_the_pod_meanwhile() -> None:
    env = make_env()
    env.kube.put(NODES, make_node("existing", cpu="4"))
    env.kube.put(PODS, make_pod("p0", tolerations=TOLERATE))
    env.sync()
    env.kube.patch(PODS, "p0", {"status": {"message": "tried"}}, "default")  # kube-scheduler's write, unseen
    outcome = env.run_batch_unsynced()
    assert isinstance(outcome, ProvisioningPass) and outcome.nominated == {"default/p0": "existing"}
    assert nomination(env, "p0") == "existing"


def test_a_refused_nomination_changes_nothing_and_the_next_pass_writes_it() -> None:
    env = make_env()
    env.kube.put(NODES, make_node("existing", cpu="4"))
    env.kube.put(PODS, make_pod("p0", tolerations=TOLERATE))
    env.kube.fail_next["patch"] = KubeError("the apiserver is slow", 504)
    outcome = env.run_batch()
    assert isinstance(outcome, ProvisioningPass) and outcome.nominated == {}
    assert nomination(env, "p0") == ""
    env.clock.step(10)
    env.run_batch()
    assert nomination(env, "p0") == "existing" and len(env.kube.items(NODES)) == 1


def test_a_nomination_to_a_node_that_is_gone_is_cleared_and_the_pod_provisioned_for() -> None:
    env = make_env(startupTaints=[])
    pod = make_pod("p0", tolerations=TOLERATE)
    pod["status"]["nominatedNodeName"] = "gone"
    env.kube.put(PODS, pod)
    env.kube.put(PODS, make_pod("other", tolerations=TOLERATE))  # opens the batch
    env.run_batch()
    assert nomination(env, "p0") == ""
    env.clock.step(10)
    env.run_batch()  # provisioned for again: the room left on the node `other` got
    (node,) = env.kube.items(NODES)
    assert nomination(env, "p0") == node["metadata"]["name"]
