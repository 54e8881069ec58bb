"""Multi-node consolidation: the longest prefix of candidates that can go at once (spec §6.2 item 5, §6.6).

Pure. Binary-searches the prefix length over the candidates (cheapest disruption first, ≥ 2
nodes), each prefix deleted or replaced by at most one cheaper node, with Karpenter's same-type
guard (`filter_out_same_type`). Does nothing while the inputs are `consolidated`; its command
waits `validation_wait_seconds` and is re-checked (`validation.py`) before acting.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from controller.deprovisioning.consolidation import (
    compute_consolidation,
    consolidation_candidates,
    filter_out_same_type,
)
from controller.deprovisioning.types import (
    CONSOLIDATION,
    MULTI_NODE_CONSOLIDATION,
    Candidate,
    Command,
    Inputs,
    Progress,
    Proposal,
    Scheduler,
)


@dataclass(frozen=True)
class MultiNodeConsolidation:
    name: str = CONSOLIDATION
    method: str = MULTI_NODE_CONSOLIDATION
    needs_validation: bool = True

    def compute(self, inputs: Inputs, scheduler: Scheduler) -> Proposal:
        if inputs.consolidated:
            return Proposal()
        cands, events = consolidation_candidates(inputs)
        if len(cands) < 2:
            return Proposal(events=tuple(events), eligible=len(cands))
        search = first_n_consolidation(inputs, cands, scheduler)
        complete = search.progress is None
        return Proposal(search.command, tuple(events), len(cands), search.covered, search.progress, complete)


@dataclass(frozen=True)
class Search:
    """The binary search's answer: the largest prefix that consolidates (or None), the largest
    prefix simulated, and where to continue when the budget stopped it before any was found."""

    command: Command | None
    covered: int
    progress: Progress | None = None


def first_n_consolidation(inputs: Inputs, cands: list[Candidate], scheduler: Scheduler) -> Search:
    """Binary search over prefix length: the largest prefix of `cands` (≥ 2 nodes) that
    consolidates (resumed from `inputs.progress` when it was searching these same candidates)."""
    names = tuple(c.name for c in cands)
    lo, hi = 1, len(cands) - 1
    saved = inputs.progress
    if saved.multi is not None and saved.multi_of == names:
        lo, hi = saved.multi
    best: Command | None = None
    covered = 0
    while lo <= hi:
        mid = (lo + hi) // 2
        cmd = compute_consolidation(inputs, cands[: mid + 1], scheduler).command
        covered = max(covered, mid + 1)
        if cmd is not None:
            cmd = filter_out_same_type(cmd)
        if cmd is not None:
            best, lo = cmd, mid + 1
        else:
            hi = mid - 1
        if lo <= hi and inputs.budget.spent():
            if best is not None:
                return Search(best, covered)  # the best so far: anytime
            return Search(None, covered, dataclasses.replace(saved, multi=(lo, hi), multi_of=names))
    return Search(best, covered)
