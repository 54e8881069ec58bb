"""Re-checking a consolidation command after the validation wait (spec §6.6 "Validation").

Pure. A consolidation command is computed, then held for `validation_wait_seconds` (15 s) while
the cluster moves on (pods arrive, nodes get nominated); `validate()` recomputes against the
fresh inputs. For an empty-node command, the nodes still candidates must still be empty. For
the others, every candidate must still be one (eligible, not blocked, not nominated) and a new
simulation must give the same kind of answer: delete stays delete, a replacement's instance
types must all still be offered. A repack's replacement by several nodes (karpy's) is
re-simulated as it was planned and stays valid while the pods need no more new nodes, costing no
more. Every command must also still be worth it where kube-scheduler would put its pods
(`consolidation.counted`). While a scale-up is under way (`Inputs.scale_up`, issue 21) no command is valid: pods are
about to take the room nodes have now.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from controller.deprovisioning.candidates import candidates
from controller.deprovisioning.consolidation import consolidation_blocker, consolidation_candidates, counted
from controller.deprovisioning.repackconsolidation import REPACK_SIMULATION
from controller.deprovisioning.simulation import ONE_NODE, Simulation, simulate
from controller.deprovisioning.types import (
    EMPTY_NODE_CONSOLIDATION,
    REPACK_CONSOLIDATION,
    Candidate,
    Command,
    Inputs,
    Scheduler,
)


@dataclass(frozen=True, eq=False)
class Validation:
    """The command to execute (rebuilt on current candidates), or why it is no longer valid."""

    command: Command | None
    why_not: str = ""


def _invalid(cmd: Command, why: str) -> Validation:
    return Validation(None, f"command is no longer valid, {why}: {cmd}")


def validate(cmd: Command, method: str, inputs: Inputs, scheduler: Scheduler) -> Validation:
    checked = _validate(cmd, method, inputs, scheduler)
    if checked.command is None or method == EMPTY_NODE_CONSOLIDATION:
        return checked
    found = counted(inputs, checked.command, scheduler)
    if found.command is None:
        return _invalid(cmd, found.why_not)
    return Validation(found.command)


def _validate(cmd: Command, method: str, inputs: Inputs, scheduler: Scheduler) -> Validation:
    if inputs.scale_up:  # a scale-up under way: pods take the room the command removes
        return _invalid(cmd, inputs.scale_up)
    if method == EMPTY_NODE_CONSOLIDATION:
        return _validate_empty(cmd, inputs)
    current, _ = consolidation_candidates(inputs)
    by_name = {c.name: c for c in current}
    mapped: list[Candidate] = [by_name[n] for n in cmd.node_names if n in by_name]
    if len(mapped) != len(cmd.candidates):
        return _invalid(cmd, "a candidate is no longer eligible")
    repack = method == REPACK_CONSOLIDATION
    sim = simulate(inputs, mapped, scheduler, REPACK_SIMULATION if repack else ONE_NODE)
    if sim is None:
        return _invalid(cmd, "a candidate is being deleted")
    if not sim.all_scheduled:
        return _invalid(cmd, "not all pods would schedule")
    if len(sim.new_nodes) > max(1, len(cmd.replacements)):
        return _invalid(cmd, f"would need {len(sim.new_nodes)} new nodes")
    if not sim.new_nodes:
        if cmd.replacements:
            return _invalid(cmd, "a replacement is no longer needed")
        return Validation(Command(cmd.deprovisioner, tuple(mapped)))
    if not cmd.replacements:
        return _invalid(cmd, "a replacement would now be needed")
    if len(cmd.replacements) > 1:
        return _validate_several(cmd, mapped, sim)
    offered = {it.name for it in sim.new_nodes[0].instance_type_options}
    if any(it.name not in offered for r in cmd.replacements for it in r.instance_type_options):
        return _invalid(cmd, "the replacement's instance types are no longer suitable")
    return Validation(Command(cmd.deprovisioner, tuple(mapped), cmd.replacements))


def _validate_several(cmd: Command, mapped: list[Candidate], sim: Simulation) -> Validation:
    """A replacement by several nodes (repack consolidation, karpy's): the pods must still fit on
    no more new nodes, whose planned launches cost no more than the command's."""
    planned = cmd.price_after
    now = sum(n.launch.price if n.launch is not None else math.inf for n in sim.new_nodes)
    if planned is None or now > planned + 1e-9:
        return _invalid(cmd, "the replacements would now cost more")
    return Validation(Command(cmd.deprovisioner, tuple(mapped), cmd.replacements))


def _validate_empty(cmd: Command, inputs: Inputs) -> Validation:
    current = candidates(inputs, lambda c: consolidation_blocker(c.node, inputs) is None)
    by_name = {c.name: c for c in current}
    mapped = [by_name[n] for n in cmd.node_names if n in by_name]
    if any(c.pods for c in mapped):
        return _invalid(cmd, "a node is no longer empty")
    if not mapped:
        return _invalid(cmd, "no candidate is left")
    # Nodes that stopped being candidates (nominated, deleted) are simply left out.
    return Validation(Command(cmd.deprovisioner, tuple(mapped)))
