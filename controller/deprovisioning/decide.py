"""One deprovisioning pass: markers, then the methods in their fixed order (spec §6.2, style.md §7).

Pure: `decide(inputs, pending, scheduler, settings) -> Decision`. Order (`DEPROVISIONERS`):
expiration, emptiness, empty-node, multi-node and single-node consolidation, then karpy's repack
consolidation (`repackconsolidation.py`); the first method with a command acts. A consolidation command
is not executed at once: it comes back as `pending`, the caller keeps it and passes it in
again; once `validation_wait_seconds` have passed since it was
computed it is re-validated on the fresh inputs and, if still valid, executed. While a
command is pending nothing else is decided (Karpenter blocks its loop for those 15 s).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from controller.deprovisioning.emptiness import Emptiness, emptiness_annotations
from controller.deprovisioning.emptynodeconsolidation import EmptyNodeConsolidation
from controller.deprovisioning.expiration import Expiration
from controller.deprovisioning.multinodeconsolidation import MultiNodeConsolidation
from controller.deprovisioning.repackconsolidation import RepackConsolidation
from controller.deprovisioning.singlenodeconsolidation import SingleNodeConsolidation
from controller.deprovisioning.types import (
    Annotate,
    Command,
    Deprovisioner,
    DeprovisioningSettings,
    Event,
    Inputs,
    Scheduler,
)
from controller.deprovisioning.validation import validate

DEPROVISIONERS: tuple[Deprovisioner, ...] = (
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
    since: float


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
    inputs: Inputs,
    pending: Pending | None,
    scheduler: Scheduler,
    settings: DeprovisioningSettings,
    deprovisioners: Sequence[Deprovisioner] = DEPROVISIONERS,
) -> Decision:
    markers = tuple(emptiness_annotations(inputs))
    wait = settings.validation_wait_seconds
    if pending is not None:
        if inputs.now < pending.since + wait:
            return Decision(annotations=markers, pending=pending, method=pending.method)
        checked = validate(pending.command, pending.method, inputs, scheduler)
        if checked.command is None:
            return Decision(annotations=markers, dropped=checked.why_not, method=pending.method)
        return Decision(annotations=markers, execute=checked.command, method=pending.method)
    events: list[Event] = []
    eligible: dict[str, int] = {}
    for deprovisioner in deprovisioners:
        proposal = deprovisioner.compute(inputs, scheduler)
        events.extend(proposal.events)
        eligible[deprovisioner.name] = max(eligible.get(deprovisioner.name, 0), proposal.eligible)
        if proposal.command is None:
            continue
        method = deprovisioner.method
        if deprovisioner.needs_validation and wait > 0:
            held = Pending(proposal.command, method, inputs.now)
            return Decision(markers, tuple(events), pending=held, method=method, eligible=eligible)
        return Decision(markers, tuple(events), execute=proposal.command, method=method, eligible=eligible)
    return Decision(markers, tuple(events), eligible=eligible)
