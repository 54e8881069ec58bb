"""The three consolidation strategies, tried in this order (spec §6.2 items 4–6, §6.6).

Pure. `EmptyNodeConsolidation` deletes every empty consolidatable node at once;
`MultiNodeConsolidation` binary-searches the longest prefix of candidates (cheapest disruption
first) that can go at once, replaced by at most one cheaper node; `SingleNodeConsolidation`
tries one node at a time. All three do nothing while the snapshot is `consolidated`, and all
three commands wait `validation_wait_seconds` and are re-checked (`validation.py`) before acting.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.deprovisioning.candidates import by_disruption_cost, candidates, filter_candidates
from controller.deprovisioning.commands import CONSOLIDATION, Command, Event, unconsolidatable
from controller.deprovisioning.consolidation import compute_consolidation, consolidation_blocker, filter_out_same_type
from controller.deprovisioning.strategy import Outcome
from controller.deprovisioning.types import Candidate, Scheduler, Snapshot


def consolidation_candidates(snapshot: Snapshot) -> tuple[list[Candidate], list[Event]]:
    """Consolidatable candidates, filtered (PDB, do-not-evict) and ordered by disruption cost."""
    events: list[Event] = []

    def eligible(cand: Candidate) -> bool:
        why = consolidation_blocker(cand.node, snapshot)
        if why is not None and "annotation" in why:
            events.append(unconsolidatable(cand.name, why))
        return why is None

    found = candidates(snapshot, eligible)
    kept, blocked = filter_candidates(found, snapshot)
    return by_disruption_cost(kept), events + blocked


@dataclass(frozen=True)
class EmptyNodeConsolidation:
    name: str = CONSOLIDATION
    method: str = "emptynodeconsolidation"
    needs_validation: bool = True

    def compute(self, snapshot: Snapshot, scheduler: Scheduler) -> Outcome:
        if snapshot.consolidated:
            return Outcome()
        cands = [
            c for c in candidates(snapshot, lambda c: consolidation_blocker(c.node, snapshot) is None) if not c.pods
        ]
        if not cands:
            return Outcome()
        return Outcome(Command(CONSOLIDATION, tuple(cands)), eligible=len(cands))


@dataclass(frozen=True)
class MultiNodeConsolidation:
    name: str = CONSOLIDATION
    method: str = "multinodeconsolidation"
    needs_validation: bool = True

    def compute(self, snapshot: Snapshot, scheduler: Scheduler) -> Outcome:
        if snapshot.consolidated:
            return Outcome()
        cands, events = consolidation_candidates(snapshot)
        if len(cands) < 2:
            return Outcome(events=tuple(events), eligible=len(cands))
        return Outcome(first_n_consolidation(snapshot, cands, scheduler), tuple(events), len(cands))


def first_n_consolidation(snapshot: Snapshot, cands: list[Candidate], scheduler: Scheduler) -> Command | None:
    """Binary search over prefix length: the largest prefix of `cands` (≥ 2 nodes) that consolidates."""
    lo, hi = 1, len(cands) - 1
    best: Command | None = None
    while lo <= hi:
        mid = (lo + hi) // 2
        cmd = compute_consolidation(snapshot, cands[: mid + 1], scheduler).command
        if cmd is not None:
            cmd = filter_out_same_type(cmd)
        if cmd is not None:
            best, lo = cmd, mid + 1
        else:
            hi = mid - 1
    return best


@dataclass(frozen=True)
class SingleNodeConsolidation:
    name: str = CONSOLIDATION
    method: str = "singlenodeconsolidation"
    needs_validation: bool = True

    def compute(self, snapshot: Snapshot, scheduler: Scheduler) -> Outcome:
        if snapshot.consolidated:
            return Outcome()
        cands, events = consolidation_candidates(snapshot)
        for cand in cands:
            result = compute_consolidation(snapshot, [cand], scheduler)
            if result.command is not None:
                return Outcome(result.command, tuple(events), len(cands))
            events.append(unconsolidatable(cand.name, result.why_not))
        return Outcome(events=tuple(events), eligible=len(cands))
