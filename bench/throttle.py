"""What EC2's request throttling costs karpy at 5,000 pods (`make bench-throttle`, issue 19 part 7).

In process, on a real monotonic clock: the provisioning controller's own passes
(`ProvisioningController.reconcile`, its launcher, binder and parallel launches) and the
termination controller's own passes, against an in-memory API server (`tests/fakes/kube.py`,
fed back into cluster state every tick as the informers would) and the simulated cloud, once
with EC2's per-action buckets on (Karpenter's kwok EC2: CreateFleet 5/s burst 50, TerminateInstances
5/s burst 100, Describe* 20/s burst 100; `aws/ratelimit.py`) and once with them off. What
throttling costs is the difference.

The scenario is one where nodes cannot share a launch: `--pods` pods (5,000) in `--deployments`
Deployments (50), every pod needing a node of its own (required hostname anti-affinity over the
whole group, as one-per-node workloads set it), each Deployment a different shape and — unless
`--shared-types` — its own instance family, so its nodes' CreateFleet requests differ from every
other Deployment's (only a Deployment's own nodes, launched at the same moment, can merge).
Then the fleet is scaled to zero: every Node deleted at once (as emptiness deprovisioning
deletes all empty nodes in one command) and the termination controller terminates the instances.

Printed per phase and per setting (buckets on / off): nodes, the seconds until every pod was
bound to its new node (launch) or every instance terminated (terminate), the cloud calls per
operation and per 1,000 pods, the calls refused (RequestLimitExceeded) and the retry-after
seconds they asked for, and the ideal time the buckets allow for those calls
(`(calls - burst) / rate`, per operation).

    python -m bench.throttle [--pods 5000] [--deployments 50] [--shared-types] [--only on|off]
"""

from __future__ import annotations

import argparse
import copy
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.clusters import LAUNCHED, provisioner
from controller.clock import SystemClock
from controller.cloudprovider.aws.ratelimit import DESCRIBE, LIMITS, Buckets, limit_of
from controller.cloudprovider.simulated.provider import SimulatedCloudProvider
from controller.core import labels as L
from controller.decisions import DecisionLog
from controller.events import EventRecorder
from controller.kube.resources import NODES, PODS, PROVISIONERS, WATCHED
from controller.provisioning.controller import ProvisioningController
from controller.state.cluster import ClusterState
from controller.termination.controller import TerminationController
from tests.fakes.kube import FakeKube

Obj = dict[str, Any]
NAMESPACE = "bench"
GROUP = {"bench.karpy.dev/placement": "one-per-node"}
# instance families a Deployment may pin (each its own CreateFleet request), cycled
FAMILIES = ("m5", "c5", "r5", "m6i", "c6i", "r6i", "m5a", "c5a", "r5a", "m6a", "c6a", "m7i", "c7i", "r7i", "m7a")
TICK = 0.2  # the provisioning job's tick (settings.tick_seconds)
TERMINATION_TICK = 0.5  # settings.termination_interval_seconds


def pods(count: int, deployments: int, shared_types: bool) -> list[Obj]:
    """`count` pending pods over `deployments` Deployments, each pod on a node of its own."""
    out = []
    for i in range(count):
        d = i % deployments
        app = f"app-{d:03d}"
        spec: Obj = {
            "containers": [{"name": "c", "image": "app", "resources": {"requests": {
                "cpu": f"{1000 + 25 * d}m", "memory": f"{2048 + 32 * d}Mi"}}}],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": L.HOSTNAME, "labelSelector": {"matchLabels": GROUP}}]}},
        }  # fmt: skip
        if not shared_types:
            spec["nodeSelector"] = {"karpenter.k8s.aws/instance-family": FAMILIES[d % len(FAMILIES)]}
        out.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{app}-{i:05d}", "namespace": NAMESPACE, "uid": f"uid-pod-{i}",
                         "labels": dict(GROUP, app=app), "creationTimestamp": LAUNCHED,
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app,
                                              "uid": f"uid-{app}", "controller": True}]},
            "spec": spec,
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                           "reason": "Unschedulable",
                                                           "lastTransitionTime": LAUNCHED}]},
        })  # fmt: skip
    return out


@dataclass
class Phase:
    seconds: float = 0.0
    cpu: float = 0.0  # the process's CPU seconds (steadier than wall time on a shared machine)
    done: bool = False
    calls: dict[str, int] = field(default_factory=dict)
    throttled: dict[str, int] = field(default_factory=dict)
    retry_after: float = 0.0
    passes: int = 0


def informers(state: ClusterState, kube: FakeKube) -> None:
    """What the watches would have delivered by now: every watched kind as listed."""
    for kind in WATCHED:
        state.replace(kind.name, [copy.copy(o) for o in kube.items(kind)])


def counts(
    cloud: SimulatedCloudProvider, before: tuple[dict[str, int], dict[str, int], float]
) -> tuple[dict[str, int], dict[str, int], float]:
    calls = {op: n - before[0].get(op, 0) for op, n in cloud.calls.items() if n - before[0].get(op, 0)}
    throttled = {op: n - before[1].get(op, 0) for op, n in cloud.throttled.items() if n - before[1].get(op, 0)}
    return calls, throttled, sum(cloud.throttle_seconds.values()) - before[2]


def snapshot_counts(cloud: SimulatedCloudProvider) -> tuple[dict[str, int], dict[str, int], float]:
    return dict(cloud.calls), dict(cloud.throttled), sum(cloud.throttle_seconds.values())


def run_until(step: Callable[[], bool], timeout: float, tick: float) -> tuple[float, bool]:
    """Call `step` every `tick` seconds (as the controller's job does) until it answers True:
    (seconds, done)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        began = time.monotonic()
        if step():
            return time.monotonic() - started, True
        time.sleep(max(0.0, tick - (time.monotonic() - began)))
    return time.monotonic() - started, False


def one(count: int, deployments: int, shared_types: bool, limits: bool, timeout: float) -> tuple[Phase, Phase, int]:
    clock = SystemClock()
    kube = FakeKube(clock)
    with tempfile.TemporaryDirectory() as tmp:
        cloud = SimulatedCloudProvider(os.path.join(tmp, "cloud.db"), clock, api_limits=Buckets() if limits else None)
        state = ClusterState(clock)
        recorder, decisions = EventRecorder(kube, clock), DecisionLog(clock)
        kube.put(PROVISIONERS, provisioner())
        for p in pods(count, deployments, shared_types):
            kube.put(PODS, p)
        informers(state, kube)
        provisioning = ProvisioningController(state, kube, cloud, clock, recorder, decisions)
        termination = TerminationController(state, kube, cloud, clock, recorder, decisions)
        launch, terminate = Phase(), Phase()

        def provision() -> bool:
            if provisioning.reconcile() is not None:
                launch.passes += 1
            informers(state, kube)
            return len(kube.bindings) >= count

        before, cpu = snapshot_counts(cloud), time.process_time()
        launch.seconds, launch.done = run_until(provision, timeout, TICK)
        launch.cpu = time.process_time() - cpu
        launch.calls, launch.throttled, launch.retry_after = counts(cloud, before)
        nodes = len(cloud.store.running("karpy"))
        provisioning.close()

        # scale to zero: the pods go, every node is deleted at once
        for p in kube.items(PODS):
            kube.delete(PODS, p["metadata"]["name"], NAMESPACE)
        for n in kube.items(NODES):
            kube.delete(NODES, n["metadata"]["name"])
        informers(state, kube)

        def drive() -> bool:
            terminate.passes += 1
            termination.reconcile()
            informers(state, kube)
            return not kube.items(NODES)

        before, cpu = snapshot_counts(cloud), time.process_time()
        terminate.seconds, terminate.done = run_until(drive, timeout, TERMINATION_TICK)
        terminate.cpu = time.process_time() - cpu
        terminate.calls, terminate.throttled, terminate.retry_after = counts(cloud, before)
        left = len(cloud.store.running("karpy"))
        if left:
            terminate.done = False
    return launch, terminate, nodes


def ideal(calls: dict[str, int]) -> float:
    """The least time EC2's buckets allow for `calls` (all at once, each action's burst first)."""
    worst = 0.0
    for op, n in calls.items():
        limit = limit_of(op, LIMITS, DESCRIBE)
        if limit is not None:
            rate, burst = limit
            worst = max(worst, (n - burst) / rate)
    return max(0.0, worst)


def report(name: str, phase: Phase, pods_count: int) -> str:
    per_k = {op: n * 1000 / pods_count for op, n in sorted(phase.calls.items())}
    total = sum(phase.calls.values()) * 1000 / pods_count
    refused = sum(phase.throttled.values())
    status = "" if phase.done else " (NOT DONE: timed out)"
    return (
        f"  {name:<9} {phase.seconds:7.1f} s{status} ({phase.cpu:.1f} s CPU); {phase.passes} passes; calls "
        f"{', '.join(f'{op} {n}' for op, n in sorted(phase.calls.items())) or 'none'}; per 1,000 pods "
        f"{total:.1f} ({', '.join(f'{op} {v:.1f}' for op, v in per_k.items())}); refused {refused}"
        f" ({', '.join(f'{op} {n}' for op, n in sorted(phase.throttled.items())) or 'none'}),"
        f" retry-after {phase.retry_after:.1f} s; the buckets' floor for these calls {ideal(phase.calls):.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--deployments", type=int, default=50)
    parser.add_argument("--shared-types", action="store_true", help="no per-Deployment instance family")
    parser.add_argument("--only", choices=("on", "off"), help="one setting of the buckets only")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per phase")
    args = parser.parse_args()
    load = os.getloadavg()
    print(
        f"{args.pods:,} pods, {args.deployments} Deployments, one node each"
        f"{'' if args.shared_types else ', an instance family per Deployment'};"
        f" load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
    )
    for limits in (True, False):
        if args.only is not None and (args.only == "on") != limits:
            continue
        launch, terminate, nodes = one(args.pods, args.deployments, args.shared_types, limits, args.timeout)
        print(f"EC2 buckets {'on' if limits else 'off'}: {nodes:,} nodes")
        print(report("launch", launch, args.pods))
        print(report("terminate", terminate, args.pods))


if __name__ == "__main__":
    main()
