"""Consolidation by value: of the commands the consolidation methods offer, the one that saves most
per unit of disruption (issue 21; karpy's `consolidation_order: value`, README "Behaviour worth
knowing").

Pure. Karpenter v0.31 acts on the first consolidation method that has a command, so multi-node
consolidation's longest prefix of the cheapest-to-disrupt candidates goes before any single node,
however little it saves per pod it moves. Ordered by value, a pass asks for every offer and acts on
the best (`offers`, `best`):

- multi-node consolidation's command, as Karpenter computes it (`multinodeconsolidation.py`);
- single-node consolidation's best candidate (`SingleNodeByValue`): the candidates are tried in
  order of the most they could save per disruption (their price, a delete, over their disruption)
  and the sweep stops once no candidate left could beat the best command found — multi-node's
  included. A candidate that cannot go by requests alone is told so without a simulation
  (`room.py`), as in the sweep in disruption order;
- karpy's repack consolidation only when neither offers anything (its MILP simulations are the
  dear ones; the fixed order asks it before single-node consolidation, `repackconsolidation.py`).

The disruption of a command is the one of Karpenter's Balanced-consolidation RFC
(`designs/balanced-consolidation.md`): Σ over its nodes of 1 + Σ over the pods that move of
max(0, eviction cost), the eviction cost being spec §6.2's per-pod term
(`candidates.eviction_cost`: 1 + deletion cost / 2^27 + priority / 2^25, clamped to ±10). The
node's 1 keeps an empty node, or one whose pods cost nothing, from an infinite value. Its saving is
the candidates' price less the replacement's planned launch (`repackconsolidation.saving`).

Anytime (`types.py`): the single-node sweep stops on the pass's budget like the one in disruption
order, with its best command so far, or, without one, where it stopped (`Progress.single_after`,
this order's candidate names); a method that stopped without a command leaves the pass incomplete
unless another offers one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from controller.deprovisioning.candidates import eviction_cost
from controller.deprovisioning.consolidation import compute_consolidation, consolidation_candidates
from controller.deprovisioning.events import unconsolidatable
from controller.deprovisioning.multinodeconsolidation import MultiNodeConsolidation
from controller.deprovisioning.repackconsolidation import RepackConsolidation, saving
from controller.deprovisioning.room import Room
from controller.deprovisioning.singlenodeconsolidation import resumed
from controller.deprovisioning.types import (
    CONSOLIDATION,
    SINGLE_NODE_CONSOLIDATION,
    Candidate,
    Command,
    Deprovisioner,
    Inputs,
    Proposal,
    Scheduler,
)


def disruption(cands: Iterable[Candidate]) -> float:
    """The RFC's disruption of removing `cands`: Σ over them of 1 + Σ max(0, eviction cost) of their pods."""
    return sum(1.0 + sum(max(0.0, eviction_cost(p)) for p in c.pods) for c in cands)


def value(cmd: Command) -> float:
    """What `cmd` saves per hour per unit of disruption."""
    return saving(cmd) / disruption(cmd.candidates)


def bound(cand: Candidate) -> float:
    """The most removing `cand` alone could be worth: its price (a delete) over its disruption."""
    return (cand.price or 0.0) / disruption([cand])


def by_bound(cands: Sequence[Candidate]) -> list[Candidate]:
    """Highest bound first; ties keep the order given (cheapest to disrupt first)."""
    return sorted(cands, key=bound, reverse=True)


@dataclass(frozen=True)
class SingleNodeByValue:
    """Single-node consolidation's best command by value, none unless it is worth more than `floor`."""

    name: str = CONSOLIDATION
    method: str = SINGLE_NODE_CONSOLIDATION
    needs_validation: bool = True
    floor: float = 0.0

    def compute(self, inputs: Inputs, scheduler: Scheduler) -> Proposal:
        if inputs.consolidated:
            return Proposal()
        cands, events = consolidation_candidates(inputs)
        order = resumed(by_bound(cands), inputs.progress.single_after)
        room = Room.of(inputs) if order else None
        best: Command | None = None
        worth = self.floor
        for n, cand in enumerate(order, 1):
            if bound(cand) <= worth:  # no candidate from here on can beat the best (the order is by bound)
                return Proposal(best, tuple(events), len(cands), covered=n - 1)
            why = room.why_not(cand) if room is not None else None
            if why is not None:  # cannot go by requests alone (`room.py`)
                events.append(unconsolidatable(cand.name, why))
                continue
            result = compute_consolidation(inputs, [cand], scheduler)
            if result.command is None:
                events.append(unconsolidatable(cand.name, result.why_not))
            elif value(result.command) > worth:
                best, worth = result.command, value(result.command)
            if n < len(order) and inputs.budget.spent():
                if best is not None:  # anytime: the best so far
                    return Proposal(best, tuple(events), len(cands), covered=n)
                progress = dataclasses.replace(inputs.progress, single_after=cand.name)
                return Proposal(events=tuple(events), eligible=len(cands), covered=n, progress=progress, complete=False)
        return Proposal(best, tuple(events), len(cands), covered=len(order))


Offer = tuple[Deprovisioner, Proposal]
MULTI: Deprovisioner = MultiNodeConsolidation()
REPACK: Deprovisioner = RepackConsolidation()


def offers(
    inputs: Inputs, scheduler: Scheduler, multi: Deprovisioner = MULTI, repack: Deprovisioner = REPACK
) -> list[Offer]:
    """Every consolidation method's answer for this pass, in the order they were asked."""
    first = multi.compute(inputs, scheduler)
    found: list[Offer] = [(multi, first)]
    floor = max((value(p.command) for _, p in found if p.command is not None), default=0.0)
    single = SingleNodeByValue(floor=floor)
    found.append((single, single.compute(inputs, scheduler)))
    if all(p.command is None and p.complete for _, p in found):
        found.append((repack, repack.compute(inputs, scheduler)))
    return found


def best(found: Sequence[Offer]) -> Offer | None:
    """The offer whose command is worth most (the first asked on a tie), None when none has one."""
    with_command = [(d, p) for d, p in found if p.command is not None]
    return max(with_command, key=lambda o: value(o[1].command) if o[1].command is not None else 0.0, default=None)
