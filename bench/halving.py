"""Consolidation after scaling down by half, in process (`make bench-scale`, issue 21).

The end-to-end harness's scenario (`bench/karpenter_e2e.py`): five Deployments of the 5,000-pod
mix (`SHAPES`: 250m/512Mi ×30 % spread over zones, maxSkew 1 DoNotSchedule; 500m/1Gi ×20 %;
1/2Gi ×20 %; 500m/4Gi ×10 %; 100m/128Mi ×20 %) on Karpenter kwok's 144 instance types as that
harness converts them (`kwok_catalog`), one Provisioner as it creates it. Here without a control
plane:

1. provisioning: the pods pending in `--batches` batches (12, as many provisioning passes as the
   harness's 5,000-pod run had; the Deployments' pods interleaved as their ReplicaSets create
   them), one `schedule()` (the real scheduler) each, its new nodes made Ready and initialized and
   each pod bound where the plan put it;
2. the scale-down to half: each Deployment loses half its pods, chosen as a ReplicaSet chooses
   (`replicaset_victims`: pods on nodes holding more of their Deployment first, ties seeded);
3. the controller's deprovisioning passes (`decide()`, the real scheduler, its 20 s budget per
   pass carried on through `Progress` as the controller does), each command validated as the
   controller's pass after the validation wait does (on the same cluster: nothing else happens
   here) and applied as it goes on a cluster (`apply`) — its replacements up and initialized,
   empty; the moving pods' successors placed as kube-scheduler's default scoring places them (the
   accepting node with the most room left: the controller's model, `simulation.KUBE_SCHEDULER`),
   not where the plan put them; those it finds no room for provisioned by `schedule()`, its new
   nodes launched; the candidates gone — until a pass finds nothing.

After each command: nodes, $/h, the ratio to karpy's fresh provisioning of the remaining pods (one
`schedule()` of them, pending, on no node: the harness's `fresh_price`), pods moved, the method
and action, the pass's CPU seconds, the spread Deployment's zone skew, and the nodes provisioning
launched for the moved pods kube-scheduler found no room for (the churn the end-to-end harness
shows: small nodes a later pass consolidates again); then the final ratio and the number of
commands.

    python -m bench.halving [--pods 5000] [--seed 1] [--batches 12] [--order first|value] [--detail]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.clusters import LAUNCHED, NOW, ready_node
from bench.e2e import deployment
from bench.karpenter_e2e import KWOK_TYPES, REQUIREMENTS, SHAPES, kwok_catalog, run_sh, workloads
from controller.clock import FakeClock
from controller.cloudprovider.simulated.catalog import catalog_from_json
from controller.core import labels as L
from controller.core.resources import add, fits
from controller.deprovisioning.controller import Deadline
from controller.deprovisioning.decide import decide
from controller.deprovisioning.simulation import KUBE_SCHEDULER, simulate
from controller.deprovisioning.types import (
    CONSOLIDATION_FIRST,
    CONSOLIDATION_ORDERS,
    Command,
    DeprovisioningSettings,
    Inputs,
    Progress,
)
from controller.kube.resources import NODES, PODS, PROVISIONERS, WATCHED
from controller.scheduling.scheduler import planned_labels, schedule
from controller.scheduling.types import InstanceType, NewNode, SchedulingResult
from controller.state.cluster import ClusterState
from controller.state.schedulinginput import provisionable, provisioning_input

Obj = dict[str, Any]
NAMESPACE = "bench"
SETTINGS = DeprovisioningSettings()
UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": LAUNCHED}


def kwok_types(path: Path | None = None) -> tuple[InstanceType, ...]:
    """Karpenter kwok's instance types as the end-to-end harness gives them to karpy."""
    if path is None:
        path = Path(run_sh("--module-dir").strip().splitlines()[-1]) / KWOK_TYPES
    return catalog_from_json(kwok_catalog(json.loads(path.read_text())))


def provisioner() -> Obj:
    """The harness's Provisioner (`karpenter_e2e.Karpy.start`)."""
    return {
        "apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner",
        "metadata": {"name": "default", "uid": "uid-default", "resourceVersion": "1", "creationTimestamp": LAUNCHED},
        "spec": {"requirements": REQUIREMENTS, "consolidation": {"enabled": True}},
    }  # fmt: skip


def pods_of(pods: int) -> list[Obj]:
    """The Deployments' pods, pending, in the order their ReplicaSets, created together, create
    them (interleaved: each Deployment's share of the pods so far kept equal)."""
    out: list[tuple[float, str, Obj]] = []
    for name, replicas, cpu, memory, zonal in workloads(pods):
        template = deployment(name, replicas, cpu, memory, zonal)["spec"]["template"]
        for i in range(replicas):
            pod_name = f"{name}-{i:05d}"
            out.append(((i + 1) / replicas, name, {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pod_name, "namespace": NAMESPACE, "uid": f"uid-{pod_name}",
                             "resourceVersion": "1", "labels": dict(template["metadata"]["labels"]),
                             "creationTimestamp": LAUNCHED,
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name,
                                                  "uid": f"uid-rs-{name}", "controller": True}]},
                "spec": json.loads(json.dumps(template["spec"])),
                "status": {"phase": "Pending", "conditions": [UNSCHEDULABLE]},
            }))  # fmt: skip
    return [obj for *_, obj in sorted(out, key=lambda t: (t[0], t[1]))]


def node_object(name: str, new: NewNode) -> Obj:
    """The Node a planned launch becomes once Ready and initialized."""
    assert new.launch is not None
    labels = {**planned_labels(new), L.HOSTNAME: name, L.INITIALIZED: "true"}
    return ready_node(name, new.launch.instance_type, labels)


@dataclass
class Cluster:
    """Cluster state fed as the watches would, with the pods' wire objects (to move them)."""

    state: ClusterState
    pods: dict[str, Obj]  # key → wire object
    types: tuple[InstanceType, ...]
    launched: int = 0

    def launch(self, new: NewNode) -> str:
        self.launched += 1
        name = f"node-{self.launched:05d}"
        self.state.apply(NODES.name, "ADDED", node_object(name, new))
        return name

    def carry_out(self, result: SchedulingResult) -> int:
        """Bind a provisioning result's pods where it put them, launching its new nodes; how many."""
        for node, keys in result.existing_assignments.items():
            for key in keys:
                self.bind(key, node)
        for new in result.new_nodes:
            name = self.launch(new)
            for pod in new.pods:
                self.bind(pod.key, name)
        return len(result.new_nodes)

    def bind(self, key: str, node: str) -> None:
        obj = self.pods[key]
        meta = obj["metadata"]
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)  # as the API server would
        obj["spec"]["nodeName"] = node
        obj["status"] = {"phase": "Running"}
        self.state.apply(PODS.name, "MODIFIED", obj)

    def unbind(self, key: str) -> None:
        """The pod pending again, marked `Unschedulable` (a successor kube-scheduler found no room for)."""
        obj = self.pods[key]
        meta = obj["metadata"]
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        obj["spec"].pop("nodeName", None)
        obj["status"] = {"phase": "Pending", "conditions": [UNSCHEDULABLE]}
        self.state.apply(PODS.name, "MODIFIED", obj)

    def delete_pod(self, key: str) -> None:
        obj = self.pods.pop(key)
        self.state.apply(PODS.name, "DELETED", obj)

    def price(self) -> tuple[int, float]:
        """(nodes, $/h) of the fleet now."""
        nodes = [n for n in self.state.snapshot().nodes.values() if n.owned]
        prices = {(it.name, o.zone, o.capacity_type): o.price for it in self.types for o in it.offerings}
        total = sum(prices.get((n.labels[L.INSTANCE_TYPE], n.labels[L.ZONE], n.labels[L.CAPACITY_TYPE]), 0.0)
                    for n in nodes)  # fmt: skip
        return len(nodes), total


def provision(pods: Sequence[Obj], types: tuple[InstanceType, ...], batches: int = 1) -> tuple[Cluster, float]:
    """`pods` pending on an empty cluster, provisioned in `batches` equal batches (in their order,
    each batch's pods created before its `schedule()`, which also fills the nodes of the batches
    before) and bound as planned; the cluster and its $/h as planned."""
    state = ClusterState(FakeClock(NOW))
    for kind in WATCHED:
        state.replace(kind.name, [provisioner()] if kind.name == PROVISIONERS.name else [])
    cluster = Cluster(state, {}, types)
    size = -(-len(pods) // max(1, batches))
    for first in range(0, len(pods), size):
        for obj in pods[first : first + size]:
            cluster.pods[f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"] = obj
            state.apply(PODS.name, "ADDED", obj)
        snap = state.snapshot()
        result = schedule(provisioning_input(snap, provisionable(snap), {"default": types}))
        if result.unschedulable:
            raise RuntimeError(f"provisioning left {len(result.unschedulable)} pods unschedulable")
        cluster.carry_out(result)
    return cluster, cluster.price()[1]


def fresh_price(remaining: Sequence[Obj], types: tuple[InstanceType, ...]) -> float:
    """$/h of karpy's fresh provisioning of `remaining`: pending, on an empty cluster, one batch."""
    pending = []
    for obj in remaining:
        copy = json.loads(json.dumps(obj))
        copy["spec"].pop("nodeName", None)
        copy["status"] = {"phase": "Pending", "conditions": [UNSCHEDULABLE]}
        pending.append(copy)
    return provision(pending, types)[1]


def replicaset_victims(cluster: Cluster, rng: random.Random) -> list[str]:
    """Half of each Deployment's pods, as its ReplicaSet picks them on a scale-down (all Running
    and Ready, created together): those whose node holds more pods of the same Deployment first
    (kube-controller-manager's `getPodsRankedByRelatedPodsOnSameNode`), ties in random order
    (its sort is not stable; the pods' ready times differ)."""
    by_owner: dict[str, list[Obj]] = {}
    for obj in cluster.pods.values():
        by_owner.setdefault(obj["metadata"]["ownerReferences"][0]["name"], []).append(obj)
    victims = []
    for owner in sorted(by_owner):
        pods = sorted(by_owner[owner], key=lambda p: p["metadata"]["name"])
        on_node = Counter(p["spec"]["nodeName"] for p in pods)
        keyed = [(-on_node[p["spec"]["nodeName"]], rng.random(), p) for p in pods]
        keyed.sort(key=lambda t: (t[0], t[1]))
        victims += [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for *_, p in keyed[: len(pods) // 2]]
    return victims


def apply(cluster: Cluster, cmd: Command) -> tuple[int, int]:
    """Carry out `cmd` as it goes on a cluster (the end-to-end harness): its replacements up and
    initialized, empty; its candidates' pods gone and their successors placed by kube-scheduler —
    each on the accepting node with the most room left among the nodes left and the replacements
    (`simulation.KUBE_SCHEDULER`, the controller's model of kube-scheduler's default scoring); the
    pods it finds no room for provisioned by provisioning's own `schedule()`, its new nodes
    launched; the candidates gone. Returns the pods moved and the nodes provisioning launched for
    them; raises when a pod has no destination or a node would hold more than it allocates."""
    moving = {p.key for c in cmd.candidates for p in c.pods}
    for planned in cmd.replacements:
        cluster.launch(planned)
    cluster.state.mark_for_deletion(cmd.node_names)
    # the candidates marked: their pods are the ones placed again (`Provisionable.rescheduled`)
    sim = simulate(Inputs.of(cluster.state.snapshot(), {"default": cluster.types}), [], schedule, KUBE_SCHEDULER)
    assert sim is not None
    placed = {k: node for node, keys in sim.result.existing_assignments.items() for k in keys if k in moving}
    for key in sorted(moving):
        if key in placed:
            cluster.bind(key, placed[key])
        else:
            cluster.unbind(key)
    for cand in cmd.candidates:
        cluster.state.apply(NODES.name, "DELETED", {"metadata": {"name": cand.name}})
    launched = 0
    if moving - set(placed):
        snap = cluster.state.snapshot()
        result = schedule(provisioning_input(snap, provisionable(snap), {"default": cluster.types}))
        if set(result.unschedulable) & moving:
            raise RuntimeError(f"{cmd.reason}: {len(set(result.unschedulable) & moving)} pod(s) without a destination")
        launched = cluster.carry_out(result)
    for view in cluster.state.snapshot().nodes.values():
        used = add(*(p.request.requests for p in view.movable_pods() if p.request is not None))
        if not fits(used, view.allocatable):
            raise RuntimeError(f"{cmd.reason}: {view.name} would hold more than it allocates")
    return len(moving), launched


def max_skew(cluster: Cluster, app: str) -> int:
    """max − min pods of `app` over the zones of the fleet's nodes."""
    snap = cluster.state.snapshot()
    zones = {n.name: n.labels[L.ZONE] for n in snap.nodes.values() if n.owned}
    counts = dict.fromkeys(set(zones.values()), 0)
    for obj in cluster.pods.values():
        if obj["metadata"]["labels"].get("app") == app and obj["spec"].get("nodeName") in zones:
            counts[zones[obj["spec"]["nodeName"]]] += 1
    return max(counts.values()) - min(counts.values()) if counts else 0


@dataclass(frozen=True)
class Outcome:
    commands: int
    dropped: int  # commands validation dropped
    nodes: int
    price: float
    ratio: float
    moved: int
    launched: int  # nodes provisioning launched for moved pods kube-scheduler found no room for (`apply`)
    cpu: float


def shapes(cmd: Command) -> str:
    """The command's candidates (type/zone, pods) and replacements (type/zone, pods)."""
    gone = Counter(f"{c.instance_type.name}/{c.zone}" for c in cmd.candidates)
    new = Counter(f"{r.launch.instance_type.name}/{r.launch.zone}" for r in cmd.replacements if r.launch is not None)
    text = ", ".join(f"{n}× {k}" for k, n in sorted(gone.items()))
    return text + (" → " + ", ".join(f"{n}× {k}" for k, n in sorted(new.items())) if new else "")


def settle(
    cluster: Cluster,
    fresh: float,
    max_commands: int,
    budget: float,
    quiet: bool = False,
    detail: bool = False,
    settings: DeprovisioningSettings = SETTINGS,
) -> Outcome:
    """Deprovisioning passes until one finds nothing, each command validated as the controller
    validates it after its wait (nothing changed meanwhile) and applied."""
    instance_types = {"default": cluster.types}
    spread = next(name for name, *_, zonal in SHAPES if zonal)
    progress, commands, dropped, moved, launched, cpu_total = Progress(), 0, 0, 0, 0, 0.0
    while commands < max_commands:
        started = time.process_time()
        snap = cluster.state.snapshot()
        inputs = Inputs.of(snap, instance_types, budget=Deadline(time.monotonic() + budget), progress=progress)
        decision = decide(inputs, None, schedule, settings)
        progress = decision.progress
        checked = None
        if decision.pending is not None:  # the controller's next pass after the wait, on the same cluster
            checked = decide(Inputs.of(snap, instance_types, progress=progress), decision.pending, schedule,
                             dataclasses.replace(settings, validation_wait_seconds=0.0))  # fmt: skip
        cpu = time.process_time() - started
        cpu_total += cpu
        cmd = checked.execute if checked is not None else decision.execute
        if checked is not None and cmd is None:
            dropped += 1
            if not quiet:
                print(f"  {decision.method}: dropped by validation ({checked.dropped}), {cpu:.1f} s CPU")
            continue
        if cmd is None:
            if decision.incomplete:
                if not quiet:
                    print(f"  pass stopped on its budget ({decision.method}), {cpu:.1f} s CPU; continuing")
                continue
            if not quiet:
                print(f"  no command ({cpu:.1f} s CPU): settled")
            break
        pods, extra = apply(cluster, cmd)
        moved += pods
        launched += extra
        commands += 1
        nodes, price = cluster.price()
        if not quiet:
            print(
                f"  {commands:>3} {decision.method + '/' + str(cmd.action):<40} -{len(cmd.candidates):<3}"
                f" +{len(cmd.replacements):<2} {pods:>5} pods  {nodes:>4} nodes ${price:>7.2f}/h"
                f" {price / fresh:>5.2f}x  {cpu:>5.1f} s CPU  skew {max_skew(cluster, spread)}  launched +{extra}"
            )
            if detail:
                print(f"      {shapes(cmd)}")
    nodes, price = cluster.price()
    return Outcome(commands, dropped, nodes, price, price / fresh, moved, launched, cpu_total)


def run(
    pods: int,
    seed: int,
    max_commands: int,
    budget: float,
    batches: int,
    catalog: Path | None,
    detail: bool = False,
    order: str = CONSOLIDATION_FIRST,
) -> Outcome:
    types = kwok_types(catalog)
    started = time.process_time()
    cluster, _ = provision(pods_of(pods), types, batches)
    nodes, price = cluster.price()
    print(
        f"{pods} pods of {len(SHAPES)} Deployments on {len(types)} kwok types, provisioned in {batches} batches:"
        f" {nodes} nodes, ${price:.2f}/h"
        f" ({time.process_time() - started:.1f} s CPU); load average {os.getloadavg()[0]:.1f}"
    )
    for key in replicaset_victims(cluster, random.Random(seed)):
        cluster.delete_pod(key)
    remaining = list(cluster.pods.values())
    fresh = fresh_price(remaining, types)
    nodes, price = cluster.price()
    print(
        f"scaled to half ({len(remaining)} pods, seed {seed}): {nodes} nodes, ${price:.2f}/h = {price / fresh:.2f}x"
        f" karpy's fresh provisioning of them (${fresh:.2f}/h); skew of the spread Deployment"
        f" {max_skew(cluster, next(name for name, *_, zonal in SHAPES if zonal))}"
    )
    print(f"  {'cmd':>3} {'method/action':<40} {'-/+':<7} {'moved':>10} {'fleet':>22} {'ratio':>6}  pass")
    settings = dataclasses.replace(SETTINGS, consolidation_order=order)
    outcome = settle(cluster, fresh, max_commands, budget, detail=detail, settings=settings)
    print(
        f"final: {outcome.nodes} nodes, ${outcome.price:.2f}/h = {outcome.ratio:.3f}x fresh, {outcome.commands}"
        f" commands ({outcome.dropped} dropped by validation), {outcome.moved} pods moved (provisioning launched"
        f" {outcome.launched} node(s) for those kube-scheduler found no room for), {outcome.cpu:.1f} s CPU"
        f" in passes; consolidation order {order}; load average {os.getloadavg()[0]:.1f}"
    )
    return outcome


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.halving", description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-commands", type=int, default=200)
    parser.add_argument("--budget", type=float, default=DeprovisioningSettings().consolidation_budget_seconds)
    parser.add_argument("--batches", type=int, default=12, help="provisioning passes (the harness's run: 12)")
    parser.add_argument("--detail", action="store_true", help="each command's candidates and replacements")
    parser.add_argument("--catalog", type=Path, help="kwok's instance_types.json (default: the pinned module's)")
    parser.add_argument("--order", choices=CONSOLIDATION_ORDERS, default=CONSOLIDATION_FIRST,
                        help="the consolidation_order setting")  # fmt: skip
    args = parser.parse_args(argv)
    run(args.pods, args.seed, args.max_commands, args.budget, args.batches, args.catalog, args.detail, args.order)


if __name__ == "__main__":
    main()
