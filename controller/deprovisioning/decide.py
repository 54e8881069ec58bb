"""One deprovisioning pass: markers, then the strategies in their fixed order (spec §6.2).

Pure: `decide(snapshot, pending, scheduler, settings) -> Decision`. Order: expiration,
emptiness, empty-node, multi-node and single-node consolidation, then karpy's repack
consolidation (`repack.py`); the first strategy with a command acts. A consolidation command
is not executed at once: it comes back as `pending`, the caller keeps it and passes it in
again; once `validation_wait_seconds` have passed since it was
computed it is re-validated on the fresh snapshot and, if still valid, executed. While a
command is pending nothing else is decided (Karpenter blocks its loop for those 15 s).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from controller.deprovisioning.commands import Annotate, Command, Event
from controller.deprovisioning.consolidators import (
    EmptyNodeConsolidation,
    MultiNodeConsolidation,
    SingleNodeConsolidation,
)
from controller.deprovisioning.emptiness import Emptiness, emptiness_annotations
from controller.deprovisioning.expiration import Expiration
from controller.deprovisioning.repack import RepackConsolidation
from controller.deprovisioning.strategy import Strategy
from controller.deprovisioning.types import DeprovisioningSettings, Scheduler, Snapshot
from controller.deprovisioning.validation import validate

STRATEGIES: tuple[Strategy, ...] = (
    Expiration(),
    Emptiness(),
    EmptyNodeConsolidation(),
    MultiNodeConsolidation(),
    SingleNodeConsolidation(),
    RepackConsolidation(),
)


@dataclass(frozen=True, eq=False)
class Pending:
    """A consolidation command waiting for its validation time."""

    command: Command
    method: str
    since: datetime


@dataclass(frozen=True, eq=False)
class Decision:
    """What one pass decided. `execute` acts now; `pending` is to be kept for a later pass;
    `dropped` says why a pending command was abandoned; `idle` means nothing at all to do
    (the caller may set the consolidated flag)."""

    annotations: tuple[Annotate, ...] = ()
    events: tuple[Event, ...] = ()
    execute: Command | None = None
    method: str = ""
    pending: Pending | None = None
    dropped: str = ""
    eligible: dict[str, int] = field(default_factory=dict)

    @property
    def idle(self) -> bool:
        return self.execute is None and self.pending is None and not self.dropped


def decide(
    snapshot: Snapshot,
    pending: Pending | None,
    scheduler: Scheduler,
    settings: DeprovisioningSettings,
    strategies: Sequence[Strategy] = STRATEGIES,
) -> Decision:
    markers = tuple(emptiness_annotations(snapshot))
    wait = timedelta(seconds=settings.validation_wait_seconds)
    if pending is not None:
        if snapshot.now < pending.since + wait:
            return Decision(annotations=markers, pending=pending, method=pending.method)
        checked = validate(pending.command, pending.method, snapshot, scheduler)
        if checked.command is None:
            return Decision(annotations=markers, dropped=checked.why_not, method=pending.method)
        return Decision(annotations=markers, execute=checked.command, method=pending.method)
    events: list[Event] = []
    eligible: dict[str, int] = {}
    for strategy in strategies:
        outcome = strategy.compute(snapshot, scheduler)
        events.extend(outcome.events)
        eligible[strategy.name] = max(eligible.get(strategy.name, 0), outcome.eligible)
        if outcome.command is None:
            continue
        if strategy.needs_validation and wait > timedelta(0):
            held = Pending(outcome.command, strategy.method, snapshot.now)
            return Decision(markers, tuple(events), pending=held, method=strategy.method, eligible=eligible)
        return Decision(markers, tuple(events), execute=outcome.command, method=strategy.method, eligible=eligible)
    return Decision(markers, tuple(events), eligible=eligible)
