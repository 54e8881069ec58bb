"""Consolidation's core: eligibility, pricing, and `compute_consolidation()` (spec §6.6).

Pure. Given candidates, simulate their removal and answer delete (everything fits on the
remaining nodes), replace (everything fits with one new, strictly cheaper node), or nothing.
Rules kept from Karpenter v0.27: never replace when all candidates are spot and the replacement
could be spot; a replacement that may be spot or on-demand is pinned to spot. karpy decision
(decisions table): `karpenter.sh/do-not-consolidate: "true"` opts a node out and any other
value means nothing (the provisioner's `consolidation.enabled` still decides).
The three consolidators (empty, multi-node, single-node) are in `consolidators.py`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

from controller.core import labels as L
from controller.core.requirements import IN, Requirement, Requirements
from controller.deprovisioning.commands import CONSOLIDATION, Command
from controller.deprovisioning.simulation import simulate
from controller.deprovisioning.types import Candidate, NodeInfo, Scheduler, Snapshot
from controller.scheduling.instancetypes import allowed_offerings, launch_order
from controller.scheduling.types import InstanceType, Launch, NewNode


def consolidation_blocker(node: NodeInfo, snapshot: Snapshot) -> str | None:
    """Why `node` is not eligible for consolidation (None when it is)."""
    if node.annotations.get(L.DO_NOT_CONSOLIDATE) == "true":
        return f"{L.DO_NOT_CONSOLIDATE} annotation exists"
    prov = snapshot.provisioners.get(node.provisioner_name or "")
    if prov is None or not prov.provisioner.consolidation_enabled:
        return f"provisioner {node.provisioner_name} has consolidation disabled"
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


def candidates_price(cands: Iterable[Candidate]) -> float | None:
    """Σ of each candidate's offering price; None when one has no known offering."""
    total = 0.0
    for c in cands:
        if c.price is None:
            return None
        total += c.price
    return total


@dataclasses.dataclass(frozen=True, eq=False)
class Consolidation:
    """`compute_consolidation`'s answer: a command, or why there is none."""

    command: Command | None
    why_not: str = ""


def compute_consolidation(snapshot: Snapshot, cands: Sequence[Candidate], scheduler: Scheduler) -> Consolidation:
    """Delete `cands`, replace them with one cheaper node, or nothing (spec §6.6 steps 1–9)."""
    sim = simulate(snapshot, cands, scheduler)
    if sim is None:
        return Consolidation(None, "a candidate is already being deleted")
    if not sim.all_scheduled:
        return Consolidation(None, f"not all pods would schedule, {sim.describe_errors()}")
    if not sim.new_nodes:
        return Consolidation(Command(CONSOLIDATION, tuple(cands)))
    if len(sim.new_nodes) > 1:
        return Consolidation(None, f"can't remove without creating {len(sim.new_nodes)} nodes")
    price = candidates_price(cands)
    if price is None:
        return Consolidation(None, "unable to determine the price of a candidate")
    new = sim.new_nodes[0]
    options = cheaper_options(new, price)
    if not options:
        return Consolidation(None, "can't replace with a cheaper node")
    if all(c.capacity_type == L.CAPACITY_TYPE_SPOT for c in cands) and allows_spot(new):
        return Consolidation(None, "can't replace a spot node with a spot node")
    reqs = new.requirements
    if allows_spot(new) and reqs.get_or_exists(L.CAPACITY_TYPE).has(L.CAPACITY_TYPE_ON_DEMAND):
        # Pin to spot so an unavailable spot offering fails the launch instead of buying a pricier on-demand node.
        reqs = reqs.merged([Requirement.new(L.CAPACITY_TYPE, IN, [L.CAPACITY_TYPE_SPOT])])
        options = tuple(it for it in options if allowed_offerings(it, reqs))
        if not options:
            return Consolidation(None, "can't replace with a cheaper node")
    return Consolidation(Command(CONSOLIDATION, tuple(cands), (with_options(new, options, reqs),)))


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
    return Command(cmd.deprovisioner, cmd.candidates, (with_options(new, options),))
