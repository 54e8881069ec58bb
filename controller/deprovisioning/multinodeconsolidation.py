"""Multi-node consolidation: the longest prefix of candidates that can go at once (spec §6.2 item 5, §6.6).

Pure. Binary-searches the prefix length over the candidates (cheapest disruption first, ≥ 2
nodes), each prefix deleted or replaced by at most one cheaper node, with Karpenter's same-type
guard (`filter_out_same_type`). Does nothing while the inputs are `consolidated`; its command
waits `validation_wait_seconds` and is re-checked (`validation.py`) before acting.
"""

from __future__ import annotations

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
        return Proposal(first_n_consolidation(inputs, cands, scheduler), tuple(events), len(cands))


def first_n_consolidation(inputs: Inputs, cands: list[Candidate], scheduler: Scheduler) -> Command | None:
    """Binary search over prefix length: the largest prefix of `cands` (≥ 2 nodes) that consolidates."""
    lo, hi = 1, len(cands) - 1
    best: Command | None = None
    while lo <= hi:
        mid = (lo + hi) // 2
        cmd = compute_consolidation(inputs, cands[: mid + 1], scheduler).command
        if cmd is not None:
            cmd = filter_out_same_type(cmd)
        if cmd is not None:
            best, lo = cmd, mid + 1
        else:
            hi = mid - 1
    return best
