"""How close karpy's launches come to the cheapest possible (`make bench`): small mixed workloads,
and consolidation after scaling down by half.

Workloads: issue 13's example (40 × 500m/1Gi, 10 × 2/8Gi, 200 × 100m/128Mi, a 100m/200Mi
DaemonSet) and seeded random mixes of 3–4 Deployments (cpu 100m–4, memory 128Mi–16Gi, 5–60
replicas each), no topology rules, on the built-in catalog with the Provisioner `karpy simulate`
would read (spot and on-demand; the webhook's defaults: linux, amd64, c/m/r, generation > 2).

- provisioning: karpy's `schedule()` as the controller runs it (the MILP pass bounded by its
  default 0.2 s per decision; `ms` is the whole call, `milp` the pass alone in a second run with
  HiGHS's status) against the offline optimum: the per-bin MILP (`exact.solve_bins`, a
  formulation independent of the runtime's pattern model) over every non-dominated instance
  type, with up to 8 more nodes than the heuristic used, no time limit, no MIP start;
- consolidation (on-demand only: Karpenter v0.27 consolidates spot nodes by deletion only, never
  by replacement): provision, delete every other pod of each Deployment, then run karpy's
  deprovisioning decisions (`deprovisioning.decide`, validation wait 0) until idle, executing
  each command as the simulation planned it; the cost it ends at against the offline optimum for
  the remaining pods.
A ratio of 1.000 is optimal; targets: ≤ 1.02 provisioning, ≤ 1.05 after consolidation.

    python -m bench.optimality
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from controller.apis.load import load_provisioner
from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.core import labels as L
from controller.deprovisioning.decide import decide
from controller.deprovisioning.types import DeprovisioningSettings, Inputs
from controller.scheduling import exact
from controller.scheduling.pods import pod_request
from controller.scheduling.provisioners import provisioner_spec
from controller.scheduling.repack import improve, pools
from controller.scheduling.scheduler import planned_labels, schedule
from controller.scheduling.solver import Solver
from controller.scheduling.types import (
    InstanceType,
    PodRequest,
    ProvisionerSpec,
    SchedulingInput,
    SchedulingResult,
    SchedulingSettings,
    StateNode,
)
from controller.state.snapshot import NodeView, PodView, ProvisionerView, Snapshot


def provisioner(capacity_types: Sequence[str]) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1alpha5",
        "kind": "Provisioner",
        "metadata": {"name": "default"},
        "spec": {
            "requirements": [{"key": L.CAPACITY_TYPE, "operator": "In", "values": list(capacity_types)}],
            "providerRef": {"name": "default"},
            "consolidation": {"enabled": True},
        },
    }


T0 = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
Deployment = tuple[str, int, str, str]  # name, replicas, cpu, memory


def pods_of(deployments: Sequence[Deployment]) -> list[PodRequest]:
    out = []
    for name, replicas, cpu, memory in deployments:
        for i in range(replicas):
            meta = {"name": f"{name}-{i}", "namespace": "default", "labels": {"app": name}, "uid": f"{name}-{i}",
                    "ownerReferences": [{"kind": "ReplicaSet", "name": name, "controller": True}]}  # fmt: skip
            spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
            out.append(pod_request({"metadata": meta, "spec": spec}))
    return out


def daemonset(cpu: str, memory: str) -> PodRequest:
    meta = {"name": "ds", "namespace": "kube-system", "ownerReferences": [{"kind": "DaemonSet", "name": "ds"}]}
    return pod_request({"metadata": meta, "spec": {"containers": [{"name": "c", "resources": {
        "requests": {"cpu": cpu, "memory": memory}}}]}})  # fmt: skip


def workloads() -> list[tuple[str, list[Deployment], list[PodRequest]]]:
    out = [("issue example", [("a", 40, "500m", "1Gi"), ("b", 10, "2", "8Gi"), ("c", 200, "100m", "128Mi")],
            [daemonset("100m", "200Mi")])]  # fmt: skip
    rng = random.Random(42)
    for k in range(5):
        deps = []
        for d in range(rng.choice([3, 4])):
            cpu = rng.choice(["100m", "250m", "500m", "1", "2", "4"])
            memory = rng.choice(["128Mi", "512Mi", "1Gi", "2Gi", "4Gi", "8Gi", "16Gi"])
            deps.append((f"d{d}", rng.randint(5, 60), cpu, memory))
        out.append((f"random mix {k + 1}", deps, [daemonset("100m", "200Mi")] if k % 2 else []))
    return out


def price_of(result: SchedulingResult) -> float:
    return sum(n.launch.price for n in result.new_nodes if n.launch is not None)


def optimum(pods: Sequence[PodRequest], daemons: Sequence[PodRequest], spec: Any) -> tuple[float, str]:
    """The offline MILP optimum (no time limit) for these pods on new nodes, and HiGHS's status."""
    inp = SchedulingInput(pods=pods, provisioners=[spec], instance_types=simulated_catalog(), daemonsets=daemons,
                          settings=SchedulingSettings(exact_time_limit=0))  # fmt: skip
    solver = Solver(inp)
    solver.solve()
    improve(solver)
    ((cls, nodes),) = pools(solver)
    pool = exact.pool_problem(solver, cls.id, nodes)
    assert pool is not None
    keep = exact.prune(pool.usable, pool.price)
    result = exact.solve_bins(pool.shapes, pool.counts, pool.usable[keep], pool.price[keep], len(nodes) + 8, None)
    return result.cost, result.status


def milp_pass(pods: Sequence[PodRequest], daemons: Sequence[PodRequest], spec: Any) -> tuple[float, str]:
    """The MILP pass alone as `schedule()` runs it: its seconds and HiGHS's status."""
    inp = SchedulingInput(pods=pods, provisioners=[spec], instance_types=simulated_catalog(), daemonsets=daemons)
    solver = Solver(inp)
    solver.solve()
    improve(solver)
    outcomes = exact.refine(solver)
    return sum(o.seconds for o in outcomes), ",".join(o.solver_status for o in outcomes)


def state_node(name: str, node: Any, pods: Sequence[PodRequest]) -> StateNode:
    launch = node.launch
    return StateNode(
        name=name, labels={**planned_labels(node), L.HOSTNAME: name}, allocatable=launch.instance_type.allocatable,
        capacity=dict(launch.instance_type.capacity), pods=tuple(pods), creation_timestamp="2026-01-01T00:00:00Z",
    )  # fmt: skip


@dataclass(frozen=True)
class Pool:
    """The Provisioner consolidation runs under, as cluster state shows it, and the types it may launch."""

    provisioner: ProvisionerView
    instance_types: tuple[InstanceType, ...]

    @property
    def spec(self) -> ProvisionerSpec:
        assert self.provisioner.spec is not None
        return self.provisioner.spec


def pod_view(pod: PodRequest, node: str) -> PodView:
    """A running pod as cluster state shows it (no priority, no annotations)."""
    return PodView(
        namespace=pod.namespace, name=pod.name, uid=pod.name, node_name=node, phase="Running", labels=pod.labels,
        annotations={}, owner_kind=pod.owner_kind, priority_class_name="", deletion_timestamp=None, created=T0,
        unschedulable=False, nominated_node_name="", tolerates_unschedulable=False, request=pod, obj={},
    )  # fmt: skip


def node_view(node: StateNode) -> NodeView:
    """A launched, initialized node as cluster state shows it, with its pods."""
    return NodeView(
        name=node.name, provider_id="", labels={**node.labels, L.INITIALIZED: "true"}, annotations={},
        taints=tuple(node.taints), capacity=dict(node.capacity), allocatable=dict(node.allocatable),
        unschedulable=False, deletion_timestamp=None, created=T0, finalizers=(), ready=True,
        obj={"metadata": {"creationTimestamp": node.creation_timestamp}},
        pods=tuple(pod_view(p, node.name) for p in node.pods),
    )  # fmt: skip


def consolidate(
    nodes: dict[str, tuple[StateNode, float]], pool: Pool, daemons: Sequence[PodRequest]
) -> tuple[dict[str, tuple[StateNode, float]], int]:
    """Run deprovisioning decisions until idle; each executed command is applied as planned."""
    settings = DeprovisioningSettings(validation_wait_seconds=0)
    counter = len(nodes)
    for step in range(100):
        views = {name: node_view(state) for name, (state, _) in nodes.items()}
        pods = {p.key: p for view in views.values() for p in view.pods}
        snap = Snapshot(
            synced=True, now=T0 + 3600, pods=pods, nodes=views, daemonset_pods=tuple(daemons),
            provisioners={pool.provisioner.name: pool.provisioner},
        )  # fmt: skip
        decision = decide(Inputs.of(snap, {pool.provisioner.name: pool.instance_types}), None, schedule, settings)
        command = decision.execute
        if command is None:
            return nodes, step
        gone = set(command.node_names)
        remaining = {name: v for name, v in nodes.items() if name not in gone}
        # the replacements launch as planned and take the pods planned for them; the other
        # moving pods go where the simulation put them: first fit on the remaining nodes
        for new in command.replacements:
            counter += 1
            name = f"node-{counter}"
            assert new.launch is not None
            remaining[name] = (state_node(name, new, new.pods), new.launch.price)
        placed = {p.key for new in command.replacements for p in new.pods}
        moving = [p for name in gone for p in nodes[name][0].pods if p.key not in placed]
        result = schedule(SchedulingInput(
            pods=moving, provisioners=[pool.spec], instance_types={pool.provisioner.name: pool.instance_types},
            nodes=[s for s, _ in remaining.values()], daemonsets=daemons,
        ))  # fmt: skip
        if result.unschedulable:
            raise RuntimeError(f"consolidation left pods unschedulable: {result.unschedulable}")
        by_key = {p.key: p for p in moving}
        for name, keys in result.existing_assignments.items():
            state, cost = remaining[name]
            remaining[name] = (replace(state, pods=(*state.pods, *(by_key[k] for k in keys))), cost)
        for new in result.new_nodes:  # none when the plan holds; provisioning would launch these
            counter += 1
            name = f"node-{counter}"
            assert new.launch is not None
            remaining[name] = (state_node(name, new, new.pods), new.launch.price)
        nodes = remaining
    return nodes, 100


def main() -> int:
    catalog = tuple(simulated_catalog())
    spec = provisioner_spec(load_provisioner(provisioner(["spot", "on-demand"])))
    od_prov = load_provisioner(provisioner(["on-demand"]))
    od_spec = provisioner_spec(od_prov)
    pool = Pool(ProvisionerView(od_prov.name, {}, od_prov, od_spec), catalog)
    print("optimality: karpy's $/hour over the offline MILP optimum (built-in catalog)")
    print(f"{'':<22} | {'provisioning, spot + on-demand':^60} | {'halved, then consolidated (on-demand)':^43}")
    print(f"{'workload':<16}{'pods':>6} | {'karpy':>8}{'optimum':>9}{'ratio':>7}{'nodes':>6}{'ms':>6}{'milp':>6}"
          f" {'status':<16}"
          f" | {'halved':>8}{'consol.':>9}{'optimum':>9}{'ratio':>7}{'cmds':>5}")  # fmt: skip
    for name, deps, daemons in workloads():
        pods = pods_of(deps)
        start = time.perf_counter()
        result = schedule(SchedulingInput(pods=pods, provisioners=[spec], instance_types=catalog, daemonsets=daemons))
        ms = (time.perf_counter() - start) * 1000
        milp_seconds, milp_status = milp_pass(pods, daemons, spec)
        best, status = optimum(pods, daemons, spec)
        price = price_of(result)
        # on-demand: provision, then scale down by half (every other pod of each Deployment goes)
        od = schedule(SchedulingInput(pods=pods, provisioners=[od_spec], instance_types=catalog, daemonsets=daemons))
        kept = {p.key for p in pods if int(p.name.rsplit("-", 1)[1]) % 2 == 0}
        nodes: dict[str, tuple[StateNode, float]] = {}
        for k, node in enumerate(od.new_nodes):
            assert node.launch is not None
            nodes[f"node-{k}"] = (state_node(f"node-{k}", node, [p for p in node.pods if p.key in kept]),
                                  node.launch.price)  # fmt: skip
        halved = sum(c for _, c in nodes.values())
        after, commands = consolidate(nodes, pool, daemons)
        consolidated = sum(c for _, c in after.values())
        best_half, status_half = optimum([p for p in pods if p.key in kept], daemons, od_spec)
        mark = "" if status == "optimal" else "*"
        mark_half = "" if status_half == "optimal" else "*"
        print(
            f"{name:<16}{len(pods):>6} | {price:>8.4f}{best:>8.4f}{mark:1}{price / best:>7.3f}"
            f"{len(result.new_nodes):>6}{ms:>6.0f}{milp_seconds * 1000:>6.0f} {milp_status:<16}"
            f"| {halved:>8.4f}{consolidated:>9.4f}{best_half:>8.4f}{mark_half:1}"
            f"{consolidated / best_half:>7.3f}{commands:>5}",
            flush=True,
        )
    print("* = HiGHS did not prove optimality (best found); ms = one schedule() call, MILP pass included;")
    print("milp = the MILP pass alone (a second run), with HiGHS's status on its integer master")
    return 0


if __name__ == "__main__":
    sys.exit(main())
