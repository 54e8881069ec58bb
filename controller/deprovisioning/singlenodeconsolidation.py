"""Single-node consolidation: one node at a time, deleted or replaced by one cheaper node
(spec §6.2 item 6, §6.6).

Pure. Tries the candidates cheapest disruption first; the first that consolidates wins, every
other tried gets an `Unconsolidatable` event saying why not. Does nothing while the inputs are
`consolidated`; its command waits `validation_wait_seconds` and is re-checked (`validation.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.deprovisioning.consolidation import compute_consolidation, consolidation_candidates
from controller.deprovisioning.events import unconsolidatable
from controller.deprovisioning.types import CONSOLIDATION, SINGLE_NODE_CONSOLIDATION, Inputs, Proposal, Scheduler


@dataclass(frozen=True)
class SingleNodeConsolidation:
    name: str = CONSOLIDATION
    method: str = SINGLE_NODE_CONSOLIDATION
    needs_validation: bool = True

    def compute(self, inputs: Inputs, scheduler: Scheduler) -> Proposal:
        if inputs.consolidated:
            return Proposal()
        cands, events = consolidation_candidates(inputs)
        for cand in cands:
            result = compute_consolidation(inputs, [cand], scheduler)
            if result.command is not None:
                return Proposal(result.command, tuple(events), len(cands))
            events.append(unconsolidatable(cand.name, result.why_not))
        return Proposal(events=tuple(events), eligible=len(cands))
