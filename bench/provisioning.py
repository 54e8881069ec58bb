"""Provisioning at 40,000 pending pods (`make bench-scale`, issue 21): pass time and memory.

In a fresh process per size: `--pods` pending pods (`bench/clusters.py`), the first
`--impossible` of which never fit (1,000 CPUs, or a label no provisioner gives), fed into cluster
state as the informers would, then the decision part of one provisioning pass as the controller
runs it: snapshot → the provisionable pods → `provisioning_input` → `schedule()` on the simulated
catalog → every pod's evaluation recorded (`DecisionLog.evaluated`). The API writes that follow
(Node creates, bindings) are the end-to-end bench's business. Printed: the state's memory (RSS
growth per 10,000 pods), the pass time (wall and process CPU: on a shared machine the CPU time is
the steadier figure), the new nodes, whether every pod that fits was placed in
this first pass, and the process's peak RSS.

    python -m bench.provisioning [--pods 40000] [--impossible 10000]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

from bench.clusters import NOW, catalog, pending_pods, provisioner, rss_mib
from controller.clock import FakeClock
from controller.decisions import UNSCHEDULABLE, Decision, DecisionLog
from controller.kube.resources import WATCHED
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import SchedulingSettings
from controller.state.cluster import ClusterState
from controller.state.schedulinginput import provisionable, provisioning_input


def one(pods: int, impossible: int) -> None:
    clock = FakeClock(NOW)
    objects = {"pods": pending_pods(pods, impossible), "provisioners": [provisioner()]}
    before = rss_mib()
    state = ClusterState(clock)
    for kind in WATCHED:
        state.replace(kind.name, objects.pop(kind.name, []))
    snap = state.snapshot()  # the views of every pod, as the first pass builds them
    fed = rss_mib() - before
    decisions = DecisionLog(clock)
    started, cpu = time.monotonic(), time.process_time()
    snap = state.snapshot()
    found = provisionable(snap)
    inp = provisioning_input(snap, found, {"default": catalog()}, SchedulingSettings(60))
    result = schedule(inp)
    for key, why in result.unschedulable.items():
        decisions.evaluated(Decision("provisioning", UNSCHEDULABLE, f"pod/{key}", why))
    seconds, cpu = time.monotonic() - started, time.process_time() - cpu
    placed = sum(len(n.pods) for n in result.new_nodes)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{pods:>7,} pending ({impossible:,} never fit): pass {seconds:5.1f} s ({cpu:.1f} s CPU);"
        f" {len(result.new_nodes):,} new nodes hold {placed:,} of the {pods - impossible:,} that fit;"
        f" {len(result.unschedulable):,} unschedulable; state {fed:,.0f} MiB ({fed / pods * 10_000:,.0f} MiB"
        f" per 10,000 pods); peak RSS {peak:,.0f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=40_000)
    parser.add_argument("--impossible", type=int, default=10_000)
    parser.add_argument("--one", action="store_true", help="one size in this process")
    args = parser.parse_args()
    if args.one:
        one(args.pods, args.impossible)
        return
    for pods, impossible in ((10_000, 2_500), (args.pods, args.impossible)):
        cmd = [
            sys.executable,
            "-m",
            "bench.provisioning",
            "--one",
            "--pods",
            str(pods),
            "--impossible",
            str(impossible),
        ]
        subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
