"""The shape every deprovisioning method shares: a strategy object computing one `Outcome`.

Pure. The fixed order (expiration, emptiness, then the three consolidators) lives in
`decide.py`; the first strategy whose outcome carries a command acts, the others wait for the
next pass (spec §6.2, style.md §7).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from controller.deprovisioning.commands import Command, Event
from controller.deprovisioning.types import Scheduler, Snapshot


@dataclass(frozen=True, eq=False)
class Outcome:
    """A strategy's answer: a command (or None), the events to record, how many nodes were eligible."""

    command: Command | None = None
    events: tuple[Event, ...] = ()
    eligible: int = 0


class Strategy(Protocol):
    """A deprovisioning method. `name` is the deprovisioner (metric/event label), `method` the
    evaluation label; `needs_validation` commands wait and are re-checked before acting."""

    @property
    def name(self) -> str: ...

    @property
    def method(self) -> str: ...

    @property
    def needs_validation(self) -> bool: ...

    def compute(self, snapshot: Snapshot, scheduler: Scheduler) -> Outcome: ...
