"""Consolidation at 1,000 nodes (`make bench-scale`, issue 21): pass time and candidates covered.

In process, from a generated cluster (`bench/clusters.py`) fed into cluster state as the
informers would: the controller's own pass — `decide()` over `Inputs.of(snapshot, catalog,
budget=Deadline(...))` with the real scheduler — so the figures are a pass as the controller runs
it, without the API writes of acting on its command.

1. A fleet after a scale-down (`--nodes` nodes, `--pods` pods, each node 45–85 % full): one pass
   with the default budget (20 s): its time, the method that answered, the command (nodes
   removed, $/h before → after), candidates eligible and covered per method.
2. The anytime sweep that replaces Karpenter's fixed timeouts and 100-candidate cap, at its
   worst: every candidate of the same fleet examined as single-node consolidation examines it
   (`deprovisioning/room.py`'s test by requests, then the simulation), as if none consolidated —
   what covering every node costs, however many budgeted passes it is spread over: candidates
   per second and (when `--sweep-seconds` stops it first) the time of the whole sweep at that rate.

Each simulation of a pass draws its nodes from the pass's node source (`scheduling/existing.py`):
the remaining nodes are set up once per pass. `--spread` gives every pod a zonal topology spread
over its app (DoNotSchedule, maxSkew 1), so each simulation counts topology over the 20,000 pods.

    python -m bench.consolidation [--nodes 1000] [--pods 20000] [--budget 20] [--sweep-seconds 120] [--spread]
"""

from __future__ import annotations

import argparse
import os
import time

from bench.clusters import NOW, catalog, consolidation_cluster, rss_mib
from controller.clock import FakeClock
from controller.deprovisioning.consolidation import compute_consolidation, consolidation_candidates
from controller.deprovisioning.controller import Deadline
from controller.deprovisioning.decide import PassResult, decide
from controller.deprovisioning.room import Room
from controller.deprovisioning.types import DeprovisioningSettings, Inputs, Progress
from controller.kube.resources import WATCHED
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import SchedulingInput, SchedulingResult
from controller.state.cluster import ClusterState
from controller.state.snapshot import Snapshot

SETTINGS = DeprovisioningSettings()


def snapshot_of(nodes: int, pods: int, fill: tuple[float, float], spread: bool = False) -> tuple[Snapshot, int, float]:
    """The fleet's snapshot, its pods, and the state's memory (RSS growth, MiB, views included)."""
    objects = consolidation_cluster(nodes, pods, fill=fill, spread=spread)
    count = len(objects["pods"])
    before = rss_mib()
    state = ClusterState(FakeClock(NOW))
    for kind in WATCHED:
        state.replace(kind.name, objects.pop(kind.name, []))
    snap = state.snapshot()
    return snap, count, rss_mib() - before


class Counting:
    """The real scheduler, counting its simulations."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, inp: SchedulingInput) -> SchedulingResult:
        self.calls += 1
        return schedule(inp)


def one_pass(snap: Snapshot, budget: float, progress: Progress) -> tuple[PassResult, float, float, int]:
    """One pass: the decision, its wall and process CPU seconds, its simulations."""
    scheduler = Counting()
    started, cpu = time.monotonic(), time.process_time()
    inputs = Inputs.of(snap, {"default": catalog()}, budget=Deadline(started + budget), progress=progress)
    decision = decide(inputs, None, scheduler, SETTINGS)
    return decision, time.monotonic() - started, time.process_time() - cpu, scheduler.calls


def describe(decision: PassResult) -> str:
    command = decision.pending.command if decision.pending is not None else decision.execute
    if command is None:
        return "no command" + (" (stopped on its budget)" if decision.incomplete else "")
    before, after = command.price_before or 0.0, command.price_after or 0.0
    return (
        f"{decision.method}: {command.action} {len(command.candidates)} node(s), "
        f"{len(command.replacements)} new, ${before:.2f}/h → ${after:.2f}/h"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--budget", type=float, default=SETTINGS.consolidation_budget_seconds)
    parser.add_argument("--sweep-seconds", type=float, default=120.0)
    parser.add_argument("--spread", action="store_true", help="every pod spread over zones with its app")
    args = parser.parse_args()

    started = time.monotonic()
    snap, pods, mib = snapshot_of(args.nodes, args.pods, (0.45, 0.85), args.spread)
    print(
        f"scale-down fleet: {args.nodes} nodes, {pods} pods{' with zonal spread' if args.spread else ''} (state fed in"
        f" {time.monotonic() - started:.1f} s, {mib:.0f} MiB of state); load average {load()}"
    )
    decision, seconds, cpu, sims = one_pass(snap, args.budget, Progress())
    print(f"  one pass, budget {args.budget:.0f} s: {seconds:.1f} s ({cpu:.1f} s CPU), {sims} simulations")
    print(f"  {describe(decision)}")
    print(f"  eligible {decision.eligible.get('consolidation', 0)}, covered {decision.covered}")

    print("the same fleet: every candidate as single-node consolidation examines it")
    sweep(snap, args.sweep_seconds)
    print(f"load average {load()}")


def load() -> str:
    """The machine's 1-minute load average now (other work inflates wall times)."""
    return f"{os.getloadavg()[0]:.1f}"


def sweep(snap: Snapshot, limit: float) -> None:
    """Every candidate examined as single-node consolidation examines it (the by-requests test,
    then the simulation) as if none consolidated, until all are done or `limit` seconds: what a
    sweep that finds nothing costs, whichever passes it is spread over."""
    started = time.monotonic()
    inputs = Inputs.of(snap, {"default": catalog()})
    cands, _ = consolidation_candidates(inputs)
    room = Room.of(inputs)
    setup = time.monotonic() - started
    examined = simulated = found = 0
    started, cpu = time.monotonic(), time.process_time()
    for cand in cands:
        if room.why_not(cand) is None:
            simulated += 1
            found += compute_consolidation(inputs, [cand], schedule).command is not None
        examined += 1
        if time.monotonic() - started >= limit:
            break
    seconds, cpu = time.monotonic() - started, time.process_time() - cpu
    rate = examined / seconds
    print(
        f"  {examined} of {len(cands)} candidates in {seconds:.1f} s, {cpu:.1f} s CPU ({rate:.1f}/s; {simulated}"
        f" simulated, {examined - simulated} told by requests alone; {found} would consolidate); set-up {setup:.1f} s"
    )
    if examined < len(cands):
        print(f"  stopped after {limit:.0f} s; the whole sweep at that rate: {len(cands) / rate:.0f} s")


if __name__ == "__main__":
    main()
