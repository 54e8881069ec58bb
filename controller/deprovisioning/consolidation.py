"""Consolidation's core: eligibility, candidates, pricing, and `compute_consolidation()` (spec §6.6).

Pure. Given candidates, simulate their removal and answer delete (everything fits on the
remaining nodes), replace (everything fits with one new, strictly cheaper node — or, for karpy's
repack consolidation, several new nodes strictly cheaper together), or nothing.
Rules kept from Karpenter v0.27: never replace when all candidates are spot and the replacement
could be spot; a replacement that may be spot or on-demand is pinned to spot. karpy decision
(issue 21): a command is also checked against where kube-scheduler, not its plan, would put the
pods it moves (`simulation.spill`); when some would find no room, the nodes provisioning would
launch for them count against the saving, and a command they leave no cheaper is not taken
(`counted`, which records their price on the command, `Command.spill`, for consolidation by value
to rank it by what it saves with them; validation re-checks it) — else each such command ends in
new small nodes that a later pass consolidates again, and the fleet never settles. karpy decision
(decisions table): `karpenter.sh/do-not-consolidate: "true"` opts a node out and any other
value means nothing (the provisioner's `consolidation.enabled` still decides).
The consolidation methods are `emptynodeconsolidation.py`, `multinodeconsolidation.py`,
`singlenodeconsolidation.py` and karpy's `repackconsolidation.py`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from controller.core import labels as L
from controller.core.requirements import IN, Requirement, Requirements
from controller.deprovisioning.candidates import by_disruption_cost, candidates, filter_candidates
from controller.deprovisioning.events import unconsolidatable
from controller.deprovisioning.simulation import ONE_NODE, Spill, simulate, spill
from controller.deprovisioning.types import CONSOLIDATION, Candidate, Command, Event, Inputs, Scheduler, price_of
from controller.scheduling.instancetypes import allowed_offerings, launch_order
from controller.scheduling.types import InstanceType, Launch, NewNode, SchedulingSettings
from controller.state.snapshot import NodeView


def consolidation_blocker(node: NodeView, inputs: Inputs) -> str | None:
    """Why `node` is not eligible for consolidation (None when it is)."""
    if node.annotations.get(L.DO_NOT_CONSOLIDATE) == "true":
        return f"{L.DO_NOT_CONSOLIDATE} annotation exists"
    prov = inputs.provisioners.get(node.provisioner or "")
    if prov is None or not prov.consolidation_enabled:
        return f"provisioner {node.provisioner} has consolidation disabled"
    return None


def worst_launch_price(it: InstanceType, reqs: Requirements) -> float:
    """The dearest price a launch of `it` under `reqs` could cost: spot if allowed, else on-demand."""
    offerings = allowed_offerings(it, reqs)
    for capacity_type in (L.CAPACITY_TYPE_SPOT, L.CAPACITY_TYPE_ON_DEMAND):
        prices = [o.price for o in offerings if o.capacity_type == capacity_type]
        if prices:
            return max(prices)
    return math.inf


def allows_spot(node: NewNode) -> bool:
    return node.requirements.get_or_exists(L.CAPACITY_TYPE).has(L.CAPACITY_TYPE_SPOT)


def cheaper_options(node: NewNode, max_price: float) -> tuple[InstanceType, ...]:
    return tuple(it for it in node.instance_type_options if worst_launch_price(it, node.requirements) < max_price)


def with_options(node: NewNode, options: Sequence[InstanceType], reqs: Requirements | None = None) -> NewNode:
    """`node` restricted to `options` (and `reqs`), its launch recomputed by the one launch
    decision (`instancetypes.launch_order`) a cloud provider's `create()` follows."""
    reqs = reqs if reqs is not None else node.requirements
    order = launch_order(options, reqs)
    launch = Launch(order[0].instance_type, order[0].offering.zone, order[0].offering.capacity_type,
                    order[0].offering.price) if order else None  # fmt: skip
    return dataclasses.replace(node, requirements=reqs, instance_type_options=tuple(options), launch=launch)


@dataclasses.dataclass(frozen=True, eq=False)
class Consolidation:
    """`compute_consolidation`'s answer: a command, or why there is none."""

    command: Command | None
    why_not: str = ""
    spill: Spill = dataclasses.field(default_factory=Spill)
    """The command's pods kube-scheduler would find no room for, and the nodes they need (`counted`)."""


def counted(inputs: Inputs, cmd: Command, scheduler: Scheduler) -> Consolidation:
    """`cmd` with its spill (`simulation.spill`), or why not when the nodes the spilled pods need
    leave it no cheaper than its candidates: the replacements' and those nodes' price together
    must stay strictly below the candidates' (the rule every consolidation and its validation
    follow)."""
    found = spill(inputs, cmd, scheduler)
    if not found:
        return Consolidation(cmd)
    before, after = cmd.price_before, cmd.price_after
    if before is None or after is None or not after + found.price < before:
        return Consolidation(
            None,
            f"kube-scheduler would find no room for {found.pods} of its pods: the nodes they need leave it no cheaper",
            found,
        )
    return Consolidation(dataclasses.replace(cmd, spill=found.price), spill=found)


def compute_consolidation(
    inputs: Inputs,
    cands: Sequence[Candidate],
    scheduler: Scheduler,
    *,
    max_new_nodes: int = 1,
    simulation: SchedulingSettings = ONE_NODE,
) -> Consolidation:
    """Delete `cands`, replace them with cheaper nodes, or nothing (spec §6.6 steps 1–9).

    Karpenter's consolidators replace with one node at most (`max_new_nodes=1`, the default);
    karpy's repack consolidation (`repackconsolidation.py`) allows several, their summed worst launch price
    strictly below the candidates' price."""
    sim = simulate(inputs, cands, scheduler, simulation)
    if sim is None:
        return Consolidation(None, "a candidate is already being deleted")
    if not sim.all_scheduled:
        return Consolidation(None, f"not all pods would schedule, {sim.describe_errors()}")
    if not sim.new_nodes:
        return counted(inputs, Command(CONSOLIDATION, tuple(cands)), scheduler)
    if len(sim.new_nodes) > max_new_nodes:
        return Consolidation(None, f"can't remove without creating {len(sim.new_nodes)} nodes")
    price = price_of(cands)
    if price is None:
        return Consolidation(None, "unable to determine the price of a candidate")
    bounds = price_bounds(sim.new_nodes, price)
    options = [cheaper_options(new, bound) for new, bound in zip(sim.new_nodes, bounds, strict=True)]
    if not all(options):
        return Consolidation(None, "can't replace with a cheaper node")
    if all(c.capacity_type == L.CAPACITY_TYPE_SPOT for c in cands) and any(map(allows_spot, sim.new_nodes)):
        return Consolidation(None, "can't replace a spot node with a spot node")
    replacements = []
    for new, kept in zip(sim.new_nodes, options, strict=True):
        reqs = new.requirements
        if allows_spot(new) and reqs.get_or_exists(L.CAPACITY_TYPE).has(L.CAPACITY_TYPE_ON_DEMAND):
            # Pin to spot so an unavailable spot offering fails the launch instead of buying a pricier on-demand node.
            reqs = reqs.merged([Requirement.new(L.CAPACITY_TYPE, IN, [L.CAPACITY_TYPE_SPOT])])
            kept = tuple(it for it in kept if allowed_offerings(it, reqs))
            if not kept:
                return Consolidation(None, "can't replace with a cheaper node")
        replacements.append(with_options(new, kept, reqs))
    return counted(inputs, Command(CONSOLIDATION, tuple(cands), tuple(replacements)), scheduler)


def price_bounds(new_nodes: Sequence[NewNode], price: float) -> list[float]:
    """The dearest worst launch price each replacement may keep so that together they stay
    strictly below `price`: one node gets all of it (Karpenter's rule); several share the saving
    their planned launches leave, equally, on top of each one's planned price."""
    if len(new_nodes) == 1:
        return [price]
    planned = [n.launch.price if n.launch is not None else math.inf for n in new_nodes]
    slack = price - sum(planned)
    if not slack > 0:
        return [0.0] * len(new_nodes)
    return [p + slack / len(new_nodes) for p in planned]


def filter_out_same_type(cmd: Command) -> Command | None:
    """Multi-node guard: a replacement of a type being removed must be cheaper than the cheapest
    removed node of that type, else the binary search would 'consolidate' n nodes into one of the same."""
    if not cmd.replacements:
        return cmd
    prices: dict[str, float] = {}
    for c in cmd.candidates:
        if c.price is not None:
            prices[c.instance_type.name] = min(c.price, prices.get(c.instance_type.name, math.inf))
    new = cmd.replacements[0]
    max_price = min((prices[it.name] for it in new.instance_type_options if it.name in prices), default=math.inf)
    options = cheaper_options(new, max_price)
    if not options:
        return None
    return dataclasses.replace(cmd, replacements=(with_options(new, options),))


def consolidation_candidates(inputs: Inputs) -> tuple[list[Candidate], list[Event]]:
    """Consolidatable candidates, filtered (PDB, do-not-evict) and ordered by disruption cost,
    without the nodes that settle after a command (`Inputs.settling`); an `Unconsolidatable`
    event per node an annotation opts out or that settles."""
    events: list[Event] = []

    def eligible(cand: Candidate) -> bool:
        why = consolidation_blocker(cand.node, inputs)
        if why is not None and "annotation" in why:
            events.append(unconsolidatable(cand.name, why))
        settles = inputs.settling(cand.node) if why is None else ""
        if settles:
            events.append(unconsolidatable(cand.name, settles))
        return why is None and not settles

    found = candidates(inputs, eligible)
    kept, blocked = filter_candidates(found, inputs)
    return by_disruption_cost(kept), events + blocked
