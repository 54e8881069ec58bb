"""Repack consolidation: karpy's fourth consolidator, beside Karpenter's three (README, "Behaviour
worth knowing").

Pure. Karpenter's consolidators replace nodes with one node at most, so after a scale-down a
fleet keeps big half-empty nodes that no single cheaper node can take over (their pods need two
smaller ones). karpy decision: try replacing the first k candidates (cheapest disruption first,
k = 1, 2, 4, … and all of them, at most `max_candidates`) with as many new nodes as the scheduler
needs (at most `max_new_nodes`), its MILP pass allowed to open more nodes and given 0.5 s of HiGHS
per simulation (`simulation`): one pass costs at most ⌈log2 max_candidates⌉ + 1 simulations (7).
Every safety rule of `compute_consolidation()` holds (all pods placed under every scheduling
constraint, PDB / do-not-evict / do-not-consolidate filtering, all-spot sets never replaced by
possible spot, replacements strictly cheaper together in the worst case, validation). A prefix
qualifies when it saves at least `min_saving` of its price (a repack moves many pods: it must be
worth that); the largest saving wins, ties to fewer nodes — among the plans provisioning would
keep first: on a cluster provisioning re-places a deleted node's pods its own way, and where its
packing cannot reproduce a tight MILP plan it launches more nodes, which later passes must remove
again (`simulation.unplaced_by_provisioning`: its own solve, the replacements up and the
candidates marked for deletion, places every pod that moves without a new node), and where
kube-scheduler would put them (`simulation.spill`, `consolidation.counted`: pods it finds no room
for make no plan "kept", and the nodes they need are taken off its saving before the threshold and
the ranking). A plan it would not keep is taken only when no prefix has one it would.
Karpenter's multi-node same-type guard (`filter_out_same_type`, against its binary search's
artefacts) is not applied: the saving threshold keeps repacks from churning.

Where it runs (`decide.py`): after empty-node and multi-node consolidation, before single-node
consolidation. Single-node consolidation acts on the first candidate in disruption-cost order that
consolidates, one node a command, each waiting for its validation; after a scale-down that is a
long run of small savings on the cheapest-to-disrupt nodes before the big half-empty ones (the
most pods, so the dearest to disrupt) are reached — 22–26 commands after halving the end-to-end
harness's 5,000 pods (`bench/halving.py`), where one repack reaches the fresh provisioning price.
When no repack saves `min_saving`, single-node consolidation acts as in Karpenter.

Anytime (`types.py`): when the pass's budget is spent between two simulations it returns the best
repack so far, or, with none yet, where it stopped (`Progress.repack`): the next pass tries the
next prefix size over the same candidates, so every size is reached however short the budget, and
the methods after it are reached once the sizes are done.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from controller.deprovisioning.consolidation import compute_consolidation, consolidation_candidates
from controller.deprovisioning.simulation import unplaced_by_provisioning
from controller.deprovisioning.types import (
    CONSOLIDATION,
    REPACK_CONSOLIDATION,
    Command,
    Inputs,
    Proposal,
    Scheduler,
    price_of,
)
from controller.scheduling.types import SchedulingSettings

REPACK_SIMULATION = SchedulingSettings(exact_time_limit=0.5, exact_more_nodes=True)
"""How a repack is simulated (and re-validated): the MILP may open more nodes, 0.5 s of HiGHS."""


def prefix_sizes(n: int, limit: int) -> list[int]:
    """1, 2, 4, … below min(n, limit), then min(n, limit) itself."""
    top = min(n, limit)
    sizes = []
    k = 1
    while k < top:
        sizes.append(k)
        k *= 2
    return [*sizes, top] if top > 0 else []


def saving(cmd: Command) -> float:
    """The hourly price the command saves, as its launches are planned (0 when unknown)."""
    before, after = cmd.price_before, cmd.price_after
    return 0.0 if before is None or after is None else before - after


def net_saving(cmd: Command) -> float:
    """What the command saves with the nodes its spilled pods will need (`Command.spill`)."""
    return saving(cmd) - cmd.spill


@dataclass(frozen=True)
class RepackConsolidation:
    name: str = CONSOLIDATION
    method: str = REPACK_CONSOLIDATION
    needs_validation: bool = True
    min_saving: float = 0.02
    max_candidates: int = 64
    max_new_nodes: int = 24
    simulation: SchedulingSettings = field(default=REPACK_SIMULATION)

    def compute(self, inputs: Inputs, scheduler: Scheduler) -> Proposal:
        if inputs.consolidated:
            return Proposal()
        cands, events = consolidation_candidates(inputs)
        # (command, net saving): the best plan kube-scheduler and provisioning would keep too, and the
        # best of those they would not (used only when none is kept)
        kept: tuple[Command, float] | None = None
        tight: tuple[Command, float] | None = None
        sizes = prefix_sizes(len(cands), self.max_candidates)
        names = tuple(c.name for c in cands[: sizes[-1]]) if sizes else ()
        saved = inputs.progress
        start = saved.repack if saved.repack_of == names and 0 < saved.repack < len(sizes) else 0
        for i in range(start, len(sizes)):
            best = (kept or tight or (None, 0.0))[0]
            if i > start and inputs.budget.spent():  # anytime: the best so far, or where to go on
                if best is not None:
                    return Proposal(best, tuple(events), len(cands), covered=sizes[i - 1])
                progress = dataclasses.replace(saved, repack=i, repack_of=names)
                return Proposal(None, tuple(events), len(cands), sizes[i - 1], progress, complete=False)
            prefix = cands[: sizes[i]]
            price = price_of(prefix)
            found = compute_consolidation(
                inputs, prefix, scheduler, max_new_nodes=self.max_new_nodes, simulation=self.simulation
            )
            cmd = found.command
            if cmd is None or price is None:
                continue
            net = net_saving(cmd)
            if net < self.min_saving * price:
                continue
            if kept is not None and net <= kept[1] + 1e-9:
                continue
            if not found.spill and not unplaced_by_provisioning(inputs, cmd, scheduler):
                kept = (cmd, net)
            elif tight is None or net > tight[1] + 1e-9:
                tight = (cmd, net)
        best = (kept or tight or (None, 0.0))[0]
        return Proposal(best, tuple(events), len(cands), covered=sizes[-1] if sizes else 0)
