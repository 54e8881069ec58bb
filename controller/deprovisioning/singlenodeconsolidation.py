"""Single-node consolidation: one node at a time, deleted or replaced by one cheaper node
(spec §6.2 item 6, §6.6).

Pure. Tries the candidates cheapest disruption first; the first that consolidates wins, every
other tried gets an `Unconsolidatable` event saying why not. Does nothing while the inputs are
`consolidated`; its command waits `validation_wait_seconds` and is re-checked (`validation.py`).

Anytime (issue 21; `types.py`): no candidate cap and no timeout that drops the rest. When the
pass's budget is spent it stops after the candidate it was simulating and says so
(`Progress.single_after`); the next pass goes on with the candidates after it, and when a sweep
reaches the end the next one starts from the first: every candidate is examined however large the
cluster (in the order of the pass that examines it). A candidate that cannot go by requests alone
(`room.py`: a pod fits on no other node and no cheaper type holds such pods) is told so without
a simulation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from controller.deprovisioning.consolidation import compute_consolidation, consolidation_candidates
from controller.deprovisioning.events import unconsolidatable
from controller.deprovisioning.room import Room
from controller.deprovisioning.types import (
    CONSOLIDATION,
    SINGLE_NODE_CONSOLIDATION,
    Candidate,
    Inputs,
    Proposal,
    Scheduler,
)


@dataclass(frozen=True)
class SingleNodeConsolidation:
    name: str = CONSOLIDATION
    method: str = SINGLE_NODE_CONSOLIDATION
    needs_validation: bool = True

    def compute(self, inputs: Inputs, scheduler: Scheduler) -> Proposal:
        if inputs.consolidated:
            return Proposal()
        cands, events = consolidation_candidates(inputs)
        order = resumed(cands, inputs.progress.single_after)
        room = Room.of(inputs) if order else None
        for n, cand in enumerate(order, 1):
            why = room.why_not(cand) if room is not None else None
            if why is not None:  # cannot go by requests alone: no simulation needed (`room.py`)
                events.append(unconsolidatable(cand.name, why))
                continue
            result = compute_consolidation(inputs, [cand], scheduler)
            if result.command is not None:
                return Proposal(result.command, tuple(events), len(cands), covered=n)
            events.append(unconsolidatable(cand.name, result.why_not))
            if n < len(order) and inputs.budget.spent():
                progress = dataclasses.replace(inputs.progress, single_after=cand.name)
                return Proposal(events=tuple(events), eligible=len(cands), covered=n, progress=progress, complete=False)
        return Proposal(events=tuple(events), eligible=len(cands), covered=len(order))


def resumed(cands: Sequence[Candidate], after: str) -> list[Candidate]:
    """The candidates after the one named `after`: the rest of the sweep it stopped in (all of
    them when it is no longer a candidate, or when `after` is empty: a new sweep)."""
    names = [c.name for c in cands]
    if after not in names:
        return list(cands)
    return list(cands[names.index(after) + 1 :])
