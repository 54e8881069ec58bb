"""Consolidation by value: of the commands the consolidation methods offer, the one that saves most
per unit of disruption (issue 21; karpy's `consolidation_order: value`, README "Behaviour worth
knowing").

Pure. Karpenter v0.31 acts on the first consolidation method that has a command, so multi-node
consolidation's longest prefix of the cheapest-to-disrupt candidates goes before any single node,
however little it saves per pod it moves. Ordered by value, a pass asks for every offer and acts on
the best (`offers`, `best`):

- multi-node consolidation's command, as Karpenter computes it (`multinodeconsolidation.py`);
- the best commands over single candidates (`SingleNodeByValue`): the candidates are tried in
  order of the most they could save per disruption (`bound`: their price, a delete, over their
  disruption), each simulated alone, and the sweep stops once no candidate left could beat the
  best command found — multi-node's included. A replacement is worth its saving; a candidate that
  can be deleted alone is worth its bound and joins the sweep's batch when all of the batch can
  still be deleted together (one more simulation) and it is worth at least `BAND` of the batch's
  first. The batch — the best deletes, at once, so their pods are placed knowing they all go and
  none lands on another of them — acts as multi-node consolidation when it holds several nodes.
  A candidate that cannot go by requests alone is told so without a simulation (`room.py`), as in
  the sweep in disruption order;
- karpy's repack consolidation only when neither offers anything (its MILP simulations are the
  dear ones; the fixed order asks it before single-node consolidation, `repackconsolidation.py`).

The disruption of a command is the one of Karpenter's Balanced-consolidation RFC
(`designs/balanced-consolidation.md`): Σ over its nodes of 1 + Σ over the pods that move of
max(0, eviction cost), the eviction cost being spec §6.2's per-pod term
(`candidates.eviction_cost`: 1 + deletion cost / 2^27 + priority / 2^25, clamped to ±10). The
node's 1 keeps an empty node, or one whose pods cost nothing, from an infinite value. Its saving is
the candidates' price less the replacement's planned launch and less the nodes provisioning would
launch for the pods kube-scheduler would find no room for (`repackconsolidation.net_saving`: the
price `consolidation.counted` records on the command, `Command.spill`): a command whose pods
kube-scheduler would leave to new nodes is worth what it saves with them.

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
from controller.deprovisioning.repackconsolidation import RepackConsolidation, net_saving
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

BAND = 0.5
"""A delete joins the sweep's batch only when worth at least this share of the batch's first."""


def disruption(cands: Iterable[Candidate]) -> float:
    """The RFC's disruption of removing `cands`: Σ over them of 1 + Σ max(0, eviction cost) of their pods."""
    return sum(1.0 + sum(max(0.0, eviction_cost(p)) for p in c.pods) for c in cands)


def value(cmd: Command) -> float:
    """What `cmd` saves per hour per unit of disruption, net of the nodes its spilled pods will need
    (`repackconsolidation.net_saving`)."""
    return net_saving(cmd) / disruption(cmd.candidates)


def bound(cand: Candidate) -> float:
    """The most removing `cand` alone could be worth: its price (a delete) over its disruption."""
    return (cand.price or 0.0) / disruption([cand])


def by_bound(cands: Sequence[Candidate]) -> list[Candidate]:
    """Highest bound first; ties keep the order given (cheapest to disrupt first)."""
    return sorted(cands, key=bound, reverse=True)


@dataclass(frozen=True)
class SingleNodeByValue:
    """The best commands by value over single candidates: a replacement, or the deletes of the
    best value that go together; none unless worth more than `floor` (module docstring)."""

    name: str = CONSOLIDATION
    method: str = SINGLE_NODE_CONSOLIDATION
    needs_validation: bool = True
    floor: float = 0.0
    band: float = BAND

    def compute(self, inputs: Inputs, scheduler: Scheduler) -> Proposal:
        if inputs.consolidated:
            return Proposal()
        cands, events = consolidation_candidates(inputs)
        order = resumed(by_bound(cands), inputs.progress.single_after)
        room = Room.of(inputs) if order else None
        sweep = _Sweep(self.floor, self.band)
        for n, cand in enumerate(order, 1):
            if bound(cand) <= sweep.needed:  # no candidate from here on can beat the best (the order is by bound)
                return Proposal(sweep.best, tuple(events), len(cands), covered=n - 1)
            why = room.why_not(cand) if room is not None else None
            if why is not None:  # cannot go by requests alone (`room.py`)
                events.append(unconsolidatable(cand.name, why))
                continue
            result = compute_consolidation(inputs, [cand], scheduler)
            if result.command is None:
                events.append(unconsolidatable(cand.name, result.why_not))
            elif result.command.replacements:
                sweep.replace(result.command)
            else:
                sweep.delete(result.command, inputs, scheduler)
            if n < len(order) and inputs.budget.spent():
                if sweep.best is not None:  # anytime: the best so far
                    return Proposal(sweep.best, tuple(events), len(cands), covered=n)
                progress = dataclasses.replace(inputs.progress, single_after=cand.name)
                return Proposal(events=tuple(events), eligible=len(cands), covered=n, progress=progress, complete=False)
        return Proposal(sweep.best, tuple(events), len(cands), covered=len(order))


class _Sweep:
    """What the sweep by value found so far: the deletes that go together (`batch`, every one worth
    more than anything else found), the best replacement, and the value a candidate must beat."""

    def __init__(self, floor: float, band: float) -> None:
        self.worth = floor
        self.band = band
        self.batch: Command | None = None
        self.first = 0.0  # the value of the batch's first delete, alone
        self.replacement: Command | None = None

    @property
    def needed(self) -> float:
        """What a candidate must be worth to change the answer: more than the best replacement (or
        the floor), and, with a batch, at least `band` of its first."""
        if self.batch is None:
            return self.worth
        return max(self.worth, self.band * self.first)

    @property
    def best(self) -> Command | None:
        return self.batch if self.batch is not None else self.replacement

    def replace(self, cmd: Command) -> None:
        if value(cmd) > self.worth:
            self.replacement, self.worth = cmd, value(cmd)

    def delete(self, cmd: Command, inputs: Inputs, scheduler: Scheduler) -> None:
        """A candidate that can be deleted alone joins the batch when all of them still can, the
        batch still worth more than the best replacement (its bound beat that before the
        simulation; the nodes its spilled pods need may leave its value below)."""
        if value(cmd) <= self.worth:
            return  # its spilled pods' nodes leave it worth no more than the best found
        if self.batch is None:
            self.batch, self.first = cmd, value(cmd)
            return
        if value(cmd) < self.band * self.first:
            return  # worth much less than the first: a later pass, when it is among the best
        joint = compute_consolidation(inputs, [*self.batch.candidates, *cmd.candidates], scheduler).command
        if joint is not None and not joint.replacements and value(joint) > self.worth:
            self.batch = joint


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


def best(found: Sequence[Offer]) -> tuple[Deprovisioner, Command] | None:
    """The command worth most (the first asked on a tie) and the method it acts as — the sweep's
    batch of several deletes as multi-node consolidation — None when no offer has one."""
    commands = [(d, p.command) for d, p in found if p.command is not None]
    if not commands:
        return None
    deprovisioner, cmd = max(commands, key=lambda o: value(o[1]))
    if deprovisioner.method == SINGLE_NODE_CONSOLIDATION and len(cmd.candidates) > 1:
        return MULTI, cmd
    return deprovisioner, cmd
