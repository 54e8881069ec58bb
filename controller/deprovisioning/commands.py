"""What a deprovisioning decision asks the acting layer to do.

Pure data. A `Command` deletes candidate nodes, or replaces them with new nodes that are
launched and initialized first (spec §6.7). `Annotate` sets or removes a node annotation (the
emptiness timestamp marker, spec §6.1). `Event` is a Kubernetes event to record (spec §9.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from controller.core.labels import CAPACITY_TYPE
from controller.deprovisioning.types import Candidate
from controller.scheduling.types import NewNode

EXPIRATION = "expiration"
EMPTINESS = "emptiness"
CONSOLIDATION = "consolidation"


class Action(StrEnum):
    DELETE = "delete"
    REPLACE = "replace"


@dataclass(frozen=True, eq=False)
class Command:
    """Remove `candidates`; with `replacements`, launch those first (action derived as Karpenter does)."""

    deprovisioner: str
    candidates: tuple[Candidate, ...]
    replacements: tuple[NewNode, ...] = ()

    @property
    def action(self) -> Action:
        return Action.REPLACE if self.replacements else Action.DELETE

    @property
    def reason(self) -> str:
        """`<deprovisioner>/<action>`: the metric label and event text (spec §6.7)."""
        return f"{self.deprovisioner}/{self.action}"

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.candidates)

    def __str__(self) -> str:
        nodes = ", ".join(f"{c.name}/{c.instance_type.name}/{c.capacity_type}" for c in self.candidates)
        text = f"{self.action}, terminating {len(self.candidates)} machines {nodes}"
        for r in self.replacements:
            types = _type_names(r.instance_type_options)
            text += f" and replacing with {_capacity_types(r)} machine from types {types}"
        return text


def _type_names(types: Sequence[object]) -> str:
    names = [str(getattr(t, "name", t)) for t in types]
    shown = ", ".join(names[:5])
    return shown + (f" and {len(names) - 5} other(s)" if len(names) > 5 else "")


def _capacity_types(node: NewNode) -> str:
    req = node.requirements.get_or_exists(CAPACITY_TYPE)
    if req.complement:
        return "spot/on-demand"
    return "/".join(sorted(req.values))


@dataclass(frozen=True, slots=True)
class Annotate:
    """Set (`value` a string) or remove (`value` None) one annotation of a node."""

    node: str
    key: str
    value: str | None


@dataclass(frozen=True, slots=True)
class Event:
    """A Kubernetes event on a Node (spec §9.2)."""

    node: str
    reason: str
    message: str
    type: str = "Normal"


def blocked(node: str, why: str) -> Event:
    return Event(node, "DeprovisioningBlocked", f"Cannot deprovision node due to {why}")


def unconsolidatable(node: str, why: str) -> Event:
    return Event(node, "Unconsolidatable", why)


def price_before(cmd: Command) -> float | None:
    """The hourly price of the candidates (None when one has no known offering)."""
    prices = [c.price for c in cmd.candidates]
    return None if any(p is None for p in prices) else sum(p for p in prices if p is not None)


def price_after(cmd: Command) -> float | None:
    """The hourly price of the replacements as they would launch (0 for a delete)."""
    prices = [r.launch.price if r.launch is not None else None for r in cmd.replacements]
    return None if any(p is None for p in prices) else sum(p for p in prices if p is not None)
