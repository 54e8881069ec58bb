"""The controller's own CPU between its decisions, at scale (`make bench-scale`, issue 21).

In process, on a generated cluster (`bench/clusters.py`: `--nodes` nodes holding `--pods` bound
pods, plus `--pending` pods kube-scheduler marked unschedulable that no provisioner can place, so
they stay pending: the first provisioning pass finds them unschedulable), wired as
`controller/main.py` wires the controller (`main.build`) against a fake API server
(`tests/fakes/kube.py`) and the
simulated cloud, cluster state fed as the informers feed it. Printed, in the CPU time of the
calling thread (the median of `--repeat` rounds; the wall clock is the machine's load):
- a snapshot of a settled cluster (every job takes one or more a tick);
- a pod watch event: its line decoded, kept (`ClusterState.apply`), and its view rebuilt by the
  next snapshot — a status update (kube-scheduler's mark, kwok's Running), the most common event;
- each periodic job's tick over the settled cluster (the provisioning tick without a batch due,
  deprovisioning between passes after a change), and what they cost together per second of wall
  time at their intervals: the controller's floor while nothing is decided.
The decisions themselves are `bench/provisioning.py` and `bench/consolidation.py`.

    python -m bench.ticks [--nodes 1000] [--pods 20000] [--pending 5000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.clusters import NOW, consolidation_cluster, pending_pods
from controller.clock import FakeClock
from controller.kube.resources import PODS, WATCHED
from controller.main import App, build
from controller.settings import Settings
from tests.fakes.kube import FakeKube

# measured apart: between passes, after a change (as every tick of a scale-up sees one)
SKIPPED = ("deprovisioning",)


def cluster(nodes: int, pods: int, pending: int) -> dict[str, list[dict[str, object]]]:
    objects = consolidation_cluster(nodes, pods)
    for i, pod in enumerate(pending_pods(pending, pending, seed=7)):
        meta = pod["metadata"]
        meta.update(name=f"pending-{i:06d}", uid=f"uid-pending-{i}")
        objects["pods"].append(pod)
    return objects


def app_for(objects: dict[str, list[dict[str, object]]], work: Path) -> App:
    clock = FakeClock(NOW)
    kube = FakeKube(clock)
    for kind in WATCHED:
        for obj in objects.get(kind.name, []):
            kube.put(kind, obj)
    settings = Settings(cloud_provider="simulated", simulated_db=str(work / "cloud.db"), leader_elect=False)
    app = build(settings, kube=kube, clock=clock)
    for kind in WATCHED:
        app.state.replace(kind.name, copy.deepcopy(kube.items(kind)))
    app.state.snapshot()  # every view built, as after the informers' first lists
    return app


def cpu_ms(fn: Callable[[], object], rounds: int, repeat: int) -> float:
    """Median CPU milliseconds of one call of `fn` (each round `rounds` calls)."""
    fn()
    samples = []
    for _ in range(repeat):
        started = time.thread_time()
        for _ in range(rounds):
            fn()
        samples.append((time.thread_time() - started) / rounds * 1000)
    return statistics.median(samples)


def watch_events(app: App, lines: list[bytes]) -> Callable[[], None]:
    """Each line decoded and applied as a status update, then the snapshot that rebuilds the views."""
    version = iter(range(10**9, 2 * 10**9))

    def run() -> None:
        for line in lines:
            obj = json.loads(line)
            obj["metadata"]["resourceVersion"] = str(next(version))
            obj["status"]["phase"] = "Running" if obj["status"].get("phase") != "Running" else "Pending"
            app.state.apply(PODS.name, "MODIFIED", obj)
        app.state.snapshot()

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--pending", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    objects = cluster(args.nodes, args.pods, args.pending)
    lines = [json.dumps(p).encode() for p in objects["pods"][:1000]]
    with tempfile.TemporaryDirectory(prefix="karpy-ticks-") as tmp:
        app = app_for(objects, Path(tmp))
        print(f"{args.nodes:,} nodes, {args.pods:,} bound pods, {args.pending:,} pending; CPU, median of {args.repeat}")
        print(f"  snapshot, settled cluster            {cpu_ms(app.state.snapshot, 20, args.repeat):8.2f} ms")
        per_event = cpu_ms(watch_events(app, lines), 1, args.repeat) / len(lines) * 1000
        print(f"  pod watch event (decode, keep, view) {per_event:8.1f} µs")
        per_second = 0.0
        for job in app.jobs:
            if job.controller.name in SKIPPED:
                continue
            ms = cpu_ms(job.controller.reconcile, 5, args.repeat)
            per_second += ms / job.interval
            print(f"  tick {job.controller.name:<32}{ms:8.2f} ms  (every {job.interval:g} s)")
        deprovisioning = next(j for j in app.jobs if j.controller.name == "deprovisioning")
        change = watch_events(app, lines[:1])

        def between_passes() -> None:
            change()
            deprovisioning.controller.reconcile()

        ms = cpu_ms(between_passes, 5, args.repeat)
        per_second += ms / deprovisioning.interval
        print(f"  tick deprovisioning (a change each)  {ms:8.2f} ms  (every {deprovisioning.interval:g} s)")
        print(f"  every job at its interval: {per_second:.0f} ms of CPU per second ({per_second / 10:.1f} % of a core)")


if __name__ == "__main__":
    main()
