"""One deprovisioning pass: markers, then the methods in their fixed order (spec §6.2, style.md §7).

Pure: `decide(inputs, pending, scheduler, settings) -> PassResult`. Markers: the emptiness
timestamp and the drift annotation (`drift.py`). Order (`DEPROVISIONERS`, Karpenter v0.31's):
expiration, drift, emptiness, empty-node, multi-node and single-node consolidation, then karpy's repack
consolidation (`repackconsolidation.py`); the first method with a command acts. A consolidation command
is not executed at once: it comes back as `pending`, the caller keeps it and passes it in
again; once `validation_wait_seconds` have passed since it was
computed it is re-validated on the fresh inputs and, if still valid, executed. While a
command is pending nothing else is decided (Karpenter blocks its loop for those 15 s).

Anytime (issue 21, `types.py`): a method that stops on `inputs.budget` ends the pass — with its
best command so far if it has one, else `incomplete` with the `progress` to pass back in next
time (an incomplete pass is not idle: the consolidated flag is not set on it). `covered` says how
many candidates each method evaluated.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from controller.deprovisioning.drift import Drift, drift_annotations
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
    Progress,
    Scheduler,
)
from controller.deprovisioning.validation import validate

DEPROVISIONERS: tuple[Deprovisioner, ...] = (
    Expiration(),
    Drift(),
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
class PassResult:
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
    covered: dict[str, int] = field(default_factory=dict)  # method → candidates evaluated this pass
    progress: Progress = field(default_factory=Progress)
    incomplete: bool = False

    @property
    def idle(self) -> bool:
        return self.execute is None and self.pending is None and not self.dropped and not self.incomplete


def decide(
    inputs: Inputs,
    pending: Pending | None,
    scheduler: Scheduler,
    settings: DeprovisioningSettings,
    deprovisioners: Sequence[Deprovisioner] = DEPROVISIONERS,
) -> PassResult:
    markers = (*emptiness_annotations(inputs), *drift_annotations(inputs))
    wait = settings.validation_wait_seconds
    progress = inputs.progress
    if pending is not None:
        if inputs.now < pending.since + wait:
            return PassResult(annotations=markers, pending=pending, method=pending.method, progress=progress)
        checked = validate(pending.command, pending.method, inputs, scheduler)
        if checked.command is None:
            return PassResult(annotations=markers, dropped=checked.why_not, method=pending.method, progress=progress)
        return PassResult(annotations=markers, execute=checked.command, method=pending.method, progress=progress)
    events: list[Event] = []
    eligible: dict[str, int] = {}
    covered: dict[str, int] = {}
    for deprovisioner in deprovisioners:
        proposal = deprovisioner.compute(inputs, scheduler)
        method = deprovisioner.method
        events.extend(proposal.events)
        eligible[deprovisioner.name] = max(eligible.get(deprovisioner.name, 0), proposal.eligible)
        covered[method] = proposal.covered
        progress = progress.merged(method, proposal.progress)
        passed = PassResult(
            markers, tuple(events), method=method, eligible=eligible, covered=covered, progress=progress
        )
        if proposal.command is None:
            if not proposal.complete:  # out of budget: the next pass continues from `progress`
                return dataclasses.replace(passed, incomplete=True)
            continue
        if deprovisioner.needs_validation and wait > 0:
            return dataclasses.replace(passed, pending=Pending(proposal.command, method, inputs.now))
        return dataclasses.replace(passed, execute=proposal.command)
    return PassResult(markers, tuple(events), eligible=eligible, covered=covered, progress=progress)
