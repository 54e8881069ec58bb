"""What every deprovisioning module shares (Karpenter's `deprovisioning/types.go`).

Pure data. A pass reads `Inputs`: cluster state's `Snapshot` — the same views every controller
reads, no second model — with the instance types each valid Provisioner may launch, the
consolidated flag, and what drift reads beyond state (`DriftInputs`: the switch, the templates by
reference, the cloud's answers; `Inputs.stamps`: each Provisioner's drift hashes now, once per
pass). A `Candidate` wraps a `NodeView` that may be disrupted; a method (a
`Deprovisioner`) answers a `Proposal` holding at most one `Command`; `Annotate` and `Event` are
what a pass asks the acting layer to write. Times are epoch seconds from the injected clock, as
everywhere else. The method names (the `deprovisioner` metric label and the evaluation
`method`) are declared here once.

Anytime passes (issue 21): `Inputs.budget` says when a pass has spent its time (the controller
gives a wall-clock deadline, tests a count of simulations; the decision code only asks
`spent()`, after at least one simulation per method, so every pass progresses). A method that
stops on the budget returns its best command so far, or none with `Proposal.progress` saying
where it stopped; the caller passes that back as `Inputs.progress` and the next pass continues
there. No candidate is left out for good: a sweep goes round every candidate over as many passes
as it needs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from typing import Protocol

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.apis.drifthash import node_template_hash_annotations, provisioner_hash_annotations
from controller.apis.provisioner import Provisioner
from controller.cloudprovider.drift import Drift
from controller.core.labels import BINDING_HOLD, CAPACITY_TYPE
from controller.core.timestamps import format_timestamp
from controller.decisions import IGNORED, LAUNCH_FAILED, UNSCHEDULABLE
from controller.scheduling.types import (
    InstanceType,
    NewNode,
    NodeSource,
    Offering,
    PodRequest,
    SchedulingInput,
    SchedulingResult,
)
from controller.state.schedulinginput import Provisionable, provisionable
from controller.state.snapshot import NodeView, PdbView, PodView, Snapshot

Scheduler = Callable[[SchedulingInput], SchedulingResult]
"""The pure scheduler (`controller.scheduling.scheduler.schedule`), injected for simulations."""

# Deprovisioners (the metric label, the first half of a command's reason) and their methods.
EXPIRATION = "expiration"
DRIFT = "drift"
EMPTINESS = "emptiness"
CONSOLIDATION = "consolidation"
EMPTY_NODE_CONSOLIDATION = "emptynodeconsolidation"
MULTI_NODE_CONSOLIDATION = "multinodeconsolidation"
SINGLE_NODE_CONSOLIDATION = "singlenodeconsolidation"
REPACK_CONSOLIDATION = "repackconsolidation"

# How a pass chooses among the consolidation methods (`DeprovisioningSettings.consolidation_order`).
CONSOLIDATION_FIRST = "first"  # Karpenter v0.31: the first method with a command acts
CONSOLIDATION_BY_VALUE = "value"  # karpy: the command saving most per disruption (`bestvalue.py`)
CONSOLIDATION_ORDERS = (CONSOLIDATION_FIRST, CONSOLIDATION_BY_VALUE)


@dataclass(frozen=True, slots=True)
class DeprovisioningSettings:
    """Timings of the deprovisioning controller (spec §11); tests shorten them."""

    validation_wait_seconds: float = 15.0
    poll_period_seconds: float = 10.0
    replacement_timeout_seconds: float = 570.0
    deletion_timeout_seconds: float = 570.0
    consolidated_reset_seconds: float = 300.0
    consolidation_budget_seconds: float = 20.0  # a pass's simulations; the next pass continues (anytime)
    drift_enabled: bool = False  # featureGates.driftEnabled
    drift_check_seconds: float = 300.0  # how long the cloud's drift answer for a node is kept
    consolidation_order: str = CONSOLIDATION_FIRST  # CONSOLIDATION_ORDERS


class Budget(Protocol):
    """Whether a pass has spent its time (asked between simulations)."""

    def spent(self) -> bool: ...


@dataclass(frozen=True)
class Unlimited:
    """No budget: every method runs to its end."""

    def spent(self) -> bool:
        return False


@dataclass(frozen=True)
class Progress:
    """Where the consolidation methods stopped when a pass ran out of budget.

    `single_after`: the last candidate single-node consolidation examined (the next pass starts
    after it, wrapping round). `multi`: multi-node consolidation's binary search bounds (lo, hi)
    over `multi_of`, the candidates' names in order — resumed only while they are the same.
    `repack`: how many of repack consolidation's prefix sizes it has tried over `repack_of`, the
    candidates' names in order (the next pass tries the next size; resumed only while they are the
    same)."""

    single_after: str = ""
    multi: tuple[int, int] | None = None
    multi_of: tuple[str, ...] = ()
    repack: int = 0
    repack_of: tuple[str, ...] = ()

    def merged(self, method: str, new: Progress | None) -> Progress:
        """This progress with `method`'s own fields taken from `new` (cleared when None: the
        method finished, or acted, and starts from the beginning next time)."""
        if method == SINGLE_NODE_CONSOLIDATION:
            return replace(self, single_after=new.single_after if new is not None else "")
        if method == MULTI_NODE_CONSOLIDATION:
            found = new if new is not None else Progress()
            return replace(self, multi=found.multi, multi_of=found.multi_of)
        if method == REPACK_CONSOLIDATION:
            found = new if new is not None else Progress()
            return replace(self, repack=found.repack, repack_of=found.repack_of)
        return self


@dataclass(frozen=True, eq=False)
class DriftInputs:
    """What the drift checks read beyond cluster state (`drift.py`): the `featureGates.driftEnabled`
    switch, the AWSNodeTemplate each Provisioner's nodes are made from by reference (None: none,
    or an inline `spec.provider`, which never drifts them), and what the cloud answered per node
    (`CloudProvider.is_drifted`; a node missing from `cloud` could not be asked: unknown)."""

    enabled: bool = False
    templates: Mapping[str, AWSNodeTemplate | None] = field(default_factory=dict)
    cloud: Mapping[str, Drift | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Stamps:
    """What a Provisioner's nodes would be stamped with now (`apis/drifthash.py`); `template` is
    None when its nodes are made from no template by reference."""

    provisioner: Mapping[str, str]
    template: Mapping[str, str] | None


@dataclass(frozen=True, eq=False)
class Inputs:
    """Everything one deprovisioning pass reads.

    `instance_types` has an entry for every valid Provisioner (`Inputs.of`). `consolidated` is
    Karpenter's "nothing changed since the last pass that found nothing" flag (spec §5.10):
    while set, the consolidation methods do nothing. `budget` and `progress`: see the module
    docstring (anytime passes). `evaluations`: pod key → the outcome of its last provisioning
    evaluation (`controller.decisions`: launched, nominated, unschedulable, …; a pod absent has
    not been evaluated yet), which `scale_up` reads. `displacements`: the recent deprovisioning
    commands' spans, which `settling` reads.
    """

    state: Snapshot
    instance_types: Mapping[str, tuple[InstanceType, ...]]
    consolidated: bool = False
    budget: Budget = field(default_factory=Unlimited)
    progress: Progress = field(default_factory=Progress)
    drift: DriftInputs = field(default_factory=DriftInputs)
    evaluations: Mapping[str, str] = field(default_factory=dict)
    displacements: tuple[Displacement, ...] = ()

    @staticmethod
    def of(
        state: Snapshot,
        instance_types: Mapping[str, Sequence[InstanceType]],
        consolidated: bool = False,
        budget: Budget | None = None,
        progress: Progress | None = None,
        drift: DriftInputs | None = None,
        evaluations: Mapping[str, str] | None = None,
        displacements: Sequence[Displacement] = (),
    ) -> Inputs:
        types = {v.name: tuple(instance_types.get(v.name, ())) for v in state.valid_provisioners()}
        return Inputs(
            state, types, consolidated, budget or Unlimited(), progress or Progress(), drift or DriftInputs(),
            evaluations if evaluations is not None else {}, tuple(displacements),
        )  # fmt: skip

    @property
    def now(self) -> float:
        return self.state.now

    @cached_property
    def nodes(self) -> tuple[NodeView, ...]:
        """The nodes karpy owns (labelled with their Provisioner), by name."""
        return tuple(n for _, n in sorted(self.state.nodes.items()) if n.owned)

    @cached_property
    def node_source(self) -> NodeSource:
        """The nodes every simulation of this pass draws its remaining nodes from (those not
        marked for deletion), set up once for all of them by the scheduler."""
        return NodeSource(tuple(n.state_node() for n in self.nodes if not n.marked_for_deletion))

    @cached_property
    def provisioners(self) -> Mapping[str, Provisioner]:
        """The valid Provisioners not being deleted, by name."""
        return {v.name: v.provisioner for v in self.state.valid_provisioners() if v.provisioner is not None}

    @property
    def pdbs(self) -> tuple[PdbView, ...]:
        return self.state.pdbs

    @cached_property
    def provisionable(self) -> Provisionable:
        """The pods provisioning would place now: pending ones, and those of nodes being deleted."""
        return provisionable(self.state)

    @cached_property
    def queued(self) -> tuple[PodView, ...]:
        """The pods kube-scheduler has not decided yet (`PodView.queued`): consolidation waits for them."""
        return tuple(self.state.queued_pods())

    @cached_property
    def scale_up(self) -> str:
        """Why consolidation waits — a scale-up is under way: it computes nothing (`decide.py`) and
        a command due for validation is dropped (`validation.py`); "" when none is. The one home of
        the rule (issue 21). A scale-up is under way while there are
        (a) pods kube-scheduler has not decided yet (`queued`): they take the room nodes have now;
        (b) pending provisionable pods karpy is bringing capacity for or has not evaluated yet —
            their last provisioning evaluation launched a node, nominated one, waits out a
            throttle, or there is none yet; a pod found unschedulable, whose launch failed, or
            ignored does not hold consolidation back (an impossible pod never blocks it forever);
        (c) nodes karpy launched not yet initialized or still held for binding (`BINDING_HOLD`),
            not being deleted: pods are about to land on them;
        (d) pending pods nominated to a node (`status.nominatedNodeName`, which karpy writes for
            the pods it leaves to kube-scheduler, `provisioning/nominations.py`): kube-scheduler
            keeps that room for them (a nomination ends with the pod's binding or its next failed
            attempt, and karpy clears one naming a node that is gone).
        The reason says which, how many, and names the oldest pod or first node."""
        if self.queued:
            oldest = min(self.queued, key=lambda p: (p.created, p.key))
            count = len(self.queued)
            return f"{count} pod(s) not yet decided by kube-scheduler (the oldest {oldest.key}): their room stays"
        coming = [p for p in self.provisionable.pending if self.evaluations.get(p.key) not in CAPACITY_NOT_COMING]
        if coming:
            pod = min(coming, key=lambda p: (p.created, p.key))
            said = self.evaluations.get(pod.key, "not evaluated yet")
            return (
                f"scale-up under way: {len(coming)} pending pod(s) karpy is bringing capacity for or has not "
                f"evaluated yet (the oldest {pod.key}: {said})"
            )
        arriving = [n for n in self.nodes if not n.deleting and not n.marked_for_deletion and _arriving(n, self.now)]
        if arriving:
            node = arriving[0]
            state = "held for binding" if BINDING_HOLD in node.annotations else "not initialized"
            return (
                f"scale-up under way: {len(arriving)} node(s) karpy launched not yet initialized or held for "
                f"binding (the first {node.name}: {state})"
            )
        nominated = [p for p in self.state.unbound_pods() if p.nominated_node_name and _pending(p)]
        if nominated:
            pod = min(nominated, key=lambda p: (p.created, p.key))
            return (
                f"scale-up under way: {len(nominated)} pending pod(s) nominated to a node for kube-scheduler "
                f"(the oldest {pod.key}: to {pod.nominated_node_name})"
            )
        return ""

    def settling(self, node: NodeView) -> str:
        """Why `node` is not a consolidation candidate yet — it settles — or "" (the rule's one
        home, issue 21). A node created while a deprovisioning command moved pods, or within
        `DISPLACED_SECONDS` after its candidates were gone (`displacements`), holds that command's
        replacements or the pods it displaced that found no room elsewhere (provisioning launched
        it for them); consolidating it again at once repeats the move. Such a node settles for
        `SETTLE_SECONDS` after its creation; then it is a candidate like any other."""
        if self.now - node.created >= SETTLE_SECONDS:
            return ""
        for span in self.displacements:
            if span.started <= node.created <= span.ended + DISPLACED_SECONDS and node.name not in span.candidates:
                until = format_timestamp(node.created + SETTLE_SECONDS)
                return f"it arrived for pods a deprovisioning command moved; it settles until {until}"
        return ""

    @cached_property
    def stamps(self) -> Mapping[str, Stamps]:
        """Per valid Provisioner, its nodes' drift stamps now (hashed once per pass)."""
        out = {}
        for name, prov in self.provisioners.items():
            template = self.drift.templates.get(name)
            tmpl = node_template_hash_annotations(template) if template is not None else None
            out[name] = Stamps(provisioner_hash_annotations(prov), tmpl)
        return out

    def node(self, name: str) -> NodeView | None:
        node = self.state.nodes.get(name)
        return node if node is not None and node.owned else None


@dataclass(frozen=True)
class Displacement:
    """A deprovisioning command's span: from when it started (cordoned, launched or deleted) until
    its candidates were gone (inf while it runs), and its candidates (one whose delete failed
    stays, and did not arrive for the command). `Inputs.settling` reads it."""

    started: float
    ended: float = math.inf
    candidates: frozenset[str] = frozenset()


SETTLE_SECONDS = 5 * 60.0
"""How long a node that arrived for a command's moved pods is kept from consolidation
(`Inputs.settling`): Karpenter v0.18's stabilization window after a node creation or deletion."""

DISPLACED_SECONDS = 60.0
"""After a command's candidates are gone, how long new nodes still count as launched for its
pods (a provisioning batch takes at most 10 s, kube-scheduler marks a pod within seconds)."""


CAPACITY_NOT_COMING = frozenset({UNSCHEDULABLE, LAUNCH_FAILED, IGNORED})
"""A pending pod's last provisioning evaluations that bring no capacity: such a pod does not hold
consolidation back (`Inputs.scale_up`)."""


# How long a node not yet initialized counts as arriving (Karpenter's registration TTL for a
# Machine, 15 min): one that never initializes must not hold consolidation back forever.
ARRIVAL_SECONDS = 15 * 60.0


def _pending(pod: PodView) -> bool:
    return not pod.node_name and not pod.deleting and not pod.terminal


def _arriving(node: NodeView, now: float) -> bool:
    """A node karpy launched that pods are about to land on: not initialized, or held for binding,
    and created less than `ARRIVAL_SECONDS` ago."""
    return now - node.created < ARRIVAL_SECONDS and (not node.initialized or BINDING_HOLD in node.annotations)


@dataclass(frozen=True, eq=False)
class Candidate:
    """A node that may be disrupted, with what pricing and ordering need."""

    node: NodeView
    provisioner: Provisioner
    instance_type: InstanceType
    capacity_type: str
    zone: str
    offering: Offering | None
    disruption_cost: float

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def pods(self) -> tuple[PodView, ...]:
        """The pods that would have to move (`NodeView.movable_pods`)."""
        return self.node.movable_pods()

    @property
    def price(self) -> float | None:
        return self.offering.price if self.offering is not None else None


def requests(pods: Iterable[PodView]) -> list[PodRequest]:
    """The scheduler's view of `pods` (movable pods always have one)."""
    return [p.request for p in pods if p.request is not None]


def price_of(cands: Iterable[Candidate]) -> float | None:
    """Σ of the candidates' offering prices: what removing them saves per hour (None when one has
    no known offering)."""
    total = 0.0
    for c in cands:
        if c.price is None:
            return None
        total += c.price
    return total


class Action(StrEnum):
    DELETE = "delete"
    REPLACE = "replace"


@dataclass(frozen=True, eq=False)
class Command:
    """Remove `candidates`; with `replacements`, launch those first (action derived as Karpenter does)."""

    deprovisioner: str
    candidates: tuple[Candidate, ...]
    replacements: tuple[NewNode, ...] = ()
    spill: float = 0.0
    """The hourly price of the nodes provisioning would launch for the pods it moves that
    kube-scheduler would find no room for (`consolidation.counted`, from `simulation.spill`; 0
    until counted, and for commands that are not consolidation's)."""

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

    @property
    def price_before(self) -> float | None:
        """The hourly price of the candidates (None when one has no known offering)."""
        return price_of(self.candidates)

    @property
    def price_after(self) -> float | None:
        """The hourly price of the replacements as they would launch (0 for a delete)."""
        prices = [r.launch.price if r.launch is not None else None for r in self.replacements]
        return None if any(p is None for p in prices) else sum(p for p in prices if p is not None)

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
    """A Kubernetes event on a Node (spec §9.2); the reasons are declared in `events.py`."""

    node: str
    reason: str
    message: str
    type: str = "Normal"


@dataclass(frozen=True, eq=False)
class Proposal:
    """A method's answer: a command (or None), the events to record, how many nodes were
    eligible, how many candidates it evaluated this pass (`covered`), and — when it stopped on the
    budget before its end — where to continue (`progress`, None when it finished)."""

    command: Command | None = None
    events: tuple[Event, ...] = ()
    eligible: int = 0
    covered: int = 0
    progress: Progress | None = None
    complete: bool = True  # False: stopped on the budget before its end


class Deprovisioner(Protocol):
    """A deprovisioning method (Karpenter's `Deprovisioner`). `name` is the deprovisioner
    (metric/event label), `method` the evaluation label; `needs_validation` commands wait and are
    re-checked before acting. The fixed order of the methods lives in `decide.py`."""

    @property
    def name(self) -> str: ...

    @property
    def method(self) -> str: ...

    @property
    def needs_validation(self) -> bool: ...

    def compute(self, inputs: Inputs, scheduler: Scheduler) -> Proposal: ...
