"""One deprovisioning pass: markers, then the methods in their fixed order (spec §6.2, style.md §7).

Pure: `decide(inputs, pending, scheduler, settings) -> PassResult`. Markers: the emptiness
timestamp and the drift annotation (`drift.py`). Order (`DEPROVISIONERS`, Karpenter v0.31's, with
karpy's repack consolidation between multi-node and single-node — `repackconsolidation.py` says
why): expiration, drift, emptiness, empty-node, multi-node, repack and single-node consolidation;
the first method with a command acts. With the setting `consolidation_order: value` (karpy's, off
by default) the methods before consolidation's still act in that order, then the consolidation
methods' commands are compared and the one saving most per unit of disruption acts
(`bestvalue.py`). A consolidation command
is not executed at once: it comes back as `pending`, the caller keeps it and passes it in
again; once `validation_wait_seconds` have passed since it was
computed it is re-validated on the fresh inputs and, if still valid, executed. While a
command is pending nothing else is decided (Karpenter blocks its loop for those 15 s).

Anytime (issue 21, `types.py`): a method that stops on `inputs.budget` ends the pass — with its
best command so far if it has one, else `incomplete` with the `progress` to pass back in next
time (an incomplete pass is not idle: the consolidated flag is not set on it). `covered` says how
many candidates each method evaluated.

While a scale-up is under way (`Inputs.scale_up`, the rule's one home, issue 21: pods
kube-scheduler has not decided yet; pending pods karpy is bringing capacity for or has not
evaluated yet; nodes karpy launched not yet initialized or held for binding) the consolidation
methods do not run (`waiting` says which and names a pod or node; expiration, drift and emptiness
still do) and a pending command due for validation is dropped (`validation.py`): disrupting nodes
while pods are about to take their room cost more than it saved (a 5,000-pod run replaced 64
nodes mid scale-up: 130 nodes at 0.63 packing instead of 97 at 0.88), and counting those pods in
every simulation costs ~1.4 s of CPU a simulation at 20,000 of them. Pods karpy found no room for
(unschedulable, launch failed, ignored) do not hold it back.

`next_pass_at` says when the next full pass is due (Karpenter's requeue): the polling period
after a complete pass that did nothing, a pending command's validation time, at once otherwise.
`mark` is the markers alone, which the controller also runs between passes on a state change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from controller.deprovisioning.bestvalue import best, offers
from controller.deprovisioning.drift import Drift, drift_annotations
from controller.deprovisioning.emptiness import Emptiness, emptiness_annotations
from controller.deprovisioning.emptynodeconsolidation import EmptyNodeConsolidation
from controller.deprovisioning.expiration import Expiration
from controller.deprovisioning.multinodeconsolidation import MultiNodeConsolidation
from controller.deprovisioning.repackconsolidation import RepackConsolidation
from controller.deprovisioning.singlenodeconsolidation import SingleNodeConsolidation
from controller.deprovisioning.types import (
    CONSOLIDATION,
    CONSOLIDATION_BY_VALUE,
    Annotate,
    Command,
    Deprovisioner,
    DeprovisioningSettings,
    Event,
    Inputs,
    Progress,
    Proposal,
    Scheduler,
)
from controller.deprovisioning.validation import validate

DEPROVISIONERS: tuple[Deprovisioner, ...] = (
    Expiration(),
    Drift(),
    Emptiness(),
    EmptyNodeConsolidation(),
    MultiNodeConsolidation(),
    RepackConsolidation(),
    SingleNodeConsolidation(),
)
BEFORE_CONSOLIDATION: tuple[Deprovisioner, ...] = DEPROVISIONERS[:4]
"""With `consolidation_order: value`: the methods that still act in order, before the consolidation
methods' offers are compared (`bestvalue.py`)."""


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
    waiting: str = ""  # why the consolidation methods did not run (a scale-up under way, `Inputs.scale_up`)

    @property
    def idle(self) -> bool:
        """Nothing at all to do: no command, every method ran to its end (the consolidated flag
        may be set; a pass whose consolidation waited has not looked, so it is not idle)."""
        return (
            self.execute is None and self.pending is None and not self.dropped and not self.incomplete
            and not self.waiting
        )  # fmt: skip


def mark(inputs: Inputs) -> tuple[Annotate, ...]:
    """The node markers' writes (emptiness timestamp, drift annotation): every pass's first step,
    and what the controller runs alone between passes when cluster state changed (Karpenter's
    markers are node controllers that re-run on every node and pod change, spec §6.1)."""
    return (*emptiness_annotations(inputs), *drift_annotations(inputs))


def decide(
    inputs: Inputs,
    pending: Pending | None,
    scheduler: Scheduler,
    settings: DeprovisioningSettings,
    deprovisioners: Sequence[Deprovisioner] | None = None,
) -> PassResult:
    """One pass. `deprovisioners` replaces the methods that act in order (tests); by default
    `DEPROVISIONERS`, or with `consolidation_order: value` the methods before consolidation's, the
    consolidation methods' offers then compared by value (`bestvalue.py`)."""
    markers = mark(inputs)
    wait = settings.validation_wait_seconds
    progress = inputs.progress
    if pending is not None:
        if inputs.now < pending.since + wait:
            return PassResult(annotations=markers, pending=pending, method=pending.method, progress=progress)
        checked = validate(pending.command, pending.method, inputs, scheduler)
        if checked.command is None:
            return PassResult(annotations=markers, dropped=checked.why_not, method=pending.method, progress=progress)
        return PassResult(annotations=markers, execute=checked.command, method=pending.method, progress=progress)
    run = _Run(markers, progress)
    by_value = settings.consolidation_order == CONSOLIDATION_BY_VALUE
    if deprovisioners is None:
        deprovisioners = BEFORE_CONSOLIDATION if by_value else DEPROVISIONERS
    waits = not inputs.consolidated and bool(inputs.scale_up)  # consolidation waits for the scale-up
    for deprovisioner in deprovisioners:
        if waits and deprovisioner.name == CONSOLIDATION:
            return dataclasses.replace(run.result(), waiting=inputs.scale_up)
        proposal = deprovisioner.compute(inputs, scheduler)
        passed = run.add(deprovisioner, proposal)
        if proposal.command is None:
            if not proposal.complete:  # out of budget: the next pass continues from `progress`
                return dataclasses.replace(passed, incomplete=True)
            continue
        return run.act(deprovisioner, proposal.command, wait, inputs.now)
    if not by_value:
        return run.result()
    if waits:
        return dataclasses.replace(run.result(), waiting=inputs.scale_up)
    found = offers(inputs, scheduler)
    for deprovisioner, proposal in found:
        passed = run.add(deprovisioner, proposal)
    chosen = best(found)
    if chosen is not None:
        return run.act(chosen[0], chosen[1], wait, inputs.now)
    if any(not p.complete for _, p in found):
        return dataclasses.replace(passed, incomplete=True)
    return run.result()


def next_pass_at(decision: PassResult, now: float, settings: DeprovisioningSettings) -> float:
    """When the next full pass is due after `decision`, a pass made at `now` (Karpenter's requeue,
    spec §6.2): a pending command's pass at its validation time; after a complete pass that did
    nothing, the polling period, whatever changes meanwhile; at once after a pass that acted (the
    controller follows its command first) or did not finish (a pending command dropped, a pass
    stopped on its budget: anytime, the next continues where it stopped). A pass whose
    consolidation waited for a scale-up did nothing either: the polling period."""
    if decision.pending is not None:
        return decision.pending.since + settings.validation_wait_seconds
    if decision.idle or decision.waiting:
        return now + settings.poll_period_seconds
    return now


class _Run:
    """What a pass gathered from the methods it asked: their events, eligible and covered counts
    and progress (`PassResult`'s fields)."""

    def __init__(self, markers: tuple[Annotate, ...], progress: Progress) -> None:
        self.markers = markers
        self.events: list[Event] = []
        self.eligible: dict[str, int] = {}
        self.covered: dict[str, int] = {}
        self.progress = progress
        self.method = ""

    def add(self, deprovisioner: Deprovisioner, proposal: Proposal) -> PassResult:
        method = deprovisioner.method
        self.events.extend(proposal.events)
        self.eligible[deprovisioner.name] = max(self.eligible.get(deprovisioner.name, 0), proposal.eligible)
        self.covered[method] = proposal.covered
        self.progress = self.progress.merged(method, proposal.progress)
        self.method = method
        return self.result(method)

    def result(self, method: str = "") -> PassResult:
        return PassResult(
            self.markers, tuple(self.events), method=method, eligible=self.eligible, covered=self.covered,
            progress=self.progress,
        )  # fmt: skip

    def act(self, deprovisioner: Deprovisioner, command: Command, wait: float, now: float) -> PassResult:
        """Execute `command` now, or keep it pending until its validation time."""
        passed = self.result(deprovisioner.method)
        if deprovisioner.needs_validation and wait > 0:
            return dataclasses.replace(passed, pending=Pending(command, deprovisioner.method, now))
        return dataclasses.replace(passed, execute=command)
