"""Empty-node consolidation: delete every empty consolidatable node at once (spec §6.2 item 4, §6.6).

Pure. The first of the consolidation methods; does nothing while the inputs are `consolidated`.
Its command waits `validation_wait_seconds` and is re-checked (`validation.py`: the nodes still
candidates must still be empty) before acting.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.deprovisioning.candidates import candidates
from controller.deprovisioning.consolidation import consolidation_blocker
from controller.deprovisioning.types import (
    CONSOLIDATION,
    EMPTY_NODE_CONSOLIDATION,
    Command,
    Inputs,
    Proposal,
    Scheduler,
)


@dataclass(frozen=True)
class EmptyNodeConsolidation:
    name: str = CONSOLIDATION
    method: str = EMPTY_NODE_CONSOLIDATION
    needs_validation: bool = True

    def compute(self, inputs: Inputs, scheduler: Scheduler) -> Proposal:
        if inputs.consolidated:
            return Proposal()
        cands = [c for c in candidates(inputs, lambda c: consolidation_blocker(c.node, inputs) is None) if not c.pods]
        if not cands:
            return Proposal()
        return Proposal(Command(CONSOLIDATION, tuple(cands)), eligible=len(cands))
