"""The deprovisioning controller: `reconcile()` = snapshot → decide → act, one action at a time.

Each call reads cluster state (nothing happens until it is synced), wraps its snapshot in the
pass's `Inputs` and lets `decide()` pick at most one command (spec §6.2). Nothing blocks: a
consolidation command waiting for its validation time is kept (`_pending`) and re-checked on a
later call; a replacement in progress (`_execution`) is followed across calls until every
replacement node is initialized, then the candidate Nodes are deleted (the termination finalizer
drains and terminates them), and then until they are gone (or `deletion_timeout_seconds` passed,
logged): as Karpenter, no new command starts while the last one's nodes are still draining, so
methods that act one node at a time (expiration, drift) really do. Spec §6.7: replace = cordon,
launch, mark for deletion, wait for initialized, delete, wait for deletion; a candidate that
cannot be cordoned stops the command before any launch, and a failed launch or a replacement
that never comes uncordons and unmarks. The cordon carries karpy's deprovisioning
mark (`cordon.py`), and every pass first lifts the marked cordons no command in progress holds —
those a killed controller left behind.

When the next full pass runs (`decide.next_pass_at`, Karpenter's requeue, spec §6.2): at once
after a pass that acted or stopped short; a pending command's pass at its validation time; after
a complete pass that did nothing, `poll_period_seconds` (10 s) later whatever changed meanwhile —
a scale-up changes state every second, and a pass every second spent the controller's CPU on
consolidation (issue 21). Every tick still lifts stale cordons and follows a command in progress,
and a tick between passes that sees cluster state changed runs the node markers alone (emptiness
timestamp, drift annotation: Karpenter's node controllers, spec §6.1). An idle pass also sets
the consolidated flag (the consolidation methods do nothing while it is set) until cluster state
changes or 5 min pass. With drift on, the markers first ask the cloud about nodes whose answer
is stale (`driftcheck.py`); a node the drift marker annotates is counted
(`karpenter_machines_drifted`) and logged as a decision, and a drift command's decision says why
each node drifted.

While a scale-up is under way (`Inputs.scale_up`: pods kube-scheduler has not decided yet, pending
pods karpy is bringing capacity for — their last provisioning evaluation in the shared
`DecisionLog`, passed in as `Inputs.evaluations` — nodes launched not yet initialized or held for
binding), a pass runs no consolidation method (`decide.py`), logged when it starts and said in
`last_pass["waiting"]`.

Each command's span (start until its candidates are gone) is kept while the nodes that arrived for
its pods settle (`Inputs.settling`: no consolidation candidates for 5 min after their creation) and
passed into every pass as `Inputs.displacements`; a restarted controller starts without them.

Each pass's simulations get `consolidation_budget_seconds` of wall time (`Deadline`); a pass
that stops on it keeps where it stopped (`_progress`) and the next pass — at once, not after the
poll period — continues there (anytime, issue 21). The last pass's time, the candidates each
method covered and whether it completed are metrics and `last_pass` (the dashboard's overview), with
the CPU time the pass's thread spent (its wall time counts what other processes took meanwhile).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.clock import Clock
from controller.cloudprovider.base import CloudProvider
from controller.cloudprovider.drift import Drift
from controller.core import labels as L
from controller.core.labels import BINDING_HOLD
from controller.core.timestamps import format_timestamp
from controller.decisions import DecisionLog
from controller.deprovisioning import decisionlog
from controller.deprovisioning import events as E
from controller.deprovisioning import metrics as M
from controller.deprovisioning.cordon import cordon_patch, stale_cordons, uncordon_patch
from controller.deprovisioning.decide import PassResult, Pending, decide, mark, next_pass_at
from controller.deprovisioning.drift import DRIFTED, node_drift
from controller.deprovisioning.driftcheck import DriftChecker
from controller.deprovisioning.launcher import Launcher
from controller.deprovisioning.outlook import Outlook, node_outlooks, unconsolidatable_reasons, underway_of
from controller.deprovisioning.types import (
    CONSOLIDATION,
    DISPLACED_SECONDS,
    DRIFT,
    SETTLE_SECONDS,
    Action,
    Annotate,
    Command,
    DeprovisioningSettings,
    Displacement,
    Event,
    Inputs,
    Progress,
    Scheduler,
)
from controller.events import EventRecorder
from controller.kube.client import Kube, Obj
from controller.kube.errors import ConflictError, KubeError, NotFoundError
from controller.kube.resources import NODES
from controller.provisioning.metrics import SIMULATION_DURATION
from controller.provisioning.nodetemplates import instance_types_for
from controller.scheduling.types import SchedulingInput, SchedulingResult
from controller.state.cluster import ClusterState
from controller.state.snapshot import Snapshot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Deadline:
    """The pass's budget on the process's monotonic clock (the decision code only asks `spent()`)."""

    at: float

    def spent(self) -> bool:
        return time.monotonic() >= self.at


VANISHED_AFTER_SECONDS = 5.0  # a replacement not seen after this long counts as failed (spec §11)


@dataclass
class Execution:
    """A replace command in progress: replacements launched, candidates cordoned and marked."""

    command: Command
    replacements: tuple[str, ...]
    started: float
    deleted: float | None = None  # when the candidates were deleted: now waiting for them to go
    kept: tuple[str, ...] = ()  # candidates whose delete failed: not waited for (`_delete`)
    moves_pods: bool = True  # its candidates had pods to move: nodes arriving meanwhile may be for them


def _default_scheduler() -> Scheduler:
    from controller.scheduling.scheduler import schedule

    return schedule


def _timed(scheduler: Scheduler) -> Scheduler:
    """The scheduler, each simulation observed in `karpenter_provisioner_scheduling_simulation_duration_seconds`."""

    def run(inp: SchedulingInput) -> SchedulingResult:
        started = time.monotonic()
        try:
            return scheduler(inp)
        finally:
            SIMULATION_DURATION.observe(time.monotonic() - started)

    return run


class DeprovisioningController:
    name = "deprovisioning"

    def __init__(
        self,
        state: ClusterState,
        kube: Kube,
        cloud: CloudProvider,
        launcher: Launcher,
        clock: Clock,
        settings: DeprovisioningSettings | None = None,
        scheduler: Scheduler | None = None,
        *,
        recorder: EventRecorder | None = None,
        decisions: DecisionLog | None = None,
    ) -> None:
        self._state, self._kube, self._cloud, self._launcher, self._clock = state, kube, cloud, launcher, clock
        self.settings = settings or DeprovisioningSettings()
        self._scheduler = _timed(scheduler or _default_scheduler())
        self.recorder = recorder or EventRecorder(kube, clock)
        self.decisions = decisions or DecisionLog(clock)
        self._pending: Pending | None = None
        self._execution: Execution | None = None
        self._displacements: list[Displacement] = []  # the recent commands' spans (`Inputs.settling`)
        self._idle_since: tuple[int, float] | None = None  # (state generation, time) the flag was set
        self._due = float("-inf")  # when the next full pass may run (`decide.next_pass_at`)
        self._marked = -1  # the state generation the node markers last ran on
        self.last_decision: PassResult | None = None
        self._progress = Progress()  # where the last pass stopped on its budget
        self.last_pass: dict[str, Any] = {}  # its time, duration, coverage (the dashboard's overview)
        self._covered_methods: set[str] = set()  # the methods `karpy_deprovisioning_candidates_covered` has
        self.unconsolidatable: dict[str, str] = {}  # the last consolidation pass's reasons, by node
        self.drift = DriftChecker(cloud, clock, self.settings.drift_enabled, self.settings.drift_check_seconds)

    def set_drift_enabled(self, on: bool) -> None:
        """The `featureGates.driftEnabled` switch, changed at run time (karpenter-global-settings)."""
        self.settings = dataclasses.replace(self.settings, drift_enabled=on)
        self.drift.enabled = on

    # The loop ----------------------------------------------------------------------------------

    def reconcile(self) -> None:
        if not self._state.synced():
            return
        generation = self._state.generation
        snap = self._state.snapshot()
        self._lift_stale_cordons(snap)
        if self._execution is not None:
            self._follow(snap)
            return
        consolidated = self._consolidated(generation, snap.now)
        if snap.now < self._due:
            if generation != self._marked:  # between passes, the markers still follow every change
                self._marked = generation
                self._mark(snap, consolidated)
            return
        self._marked = generation
        started, cpu_started = time.monotonic(), time.thread_time()
        budget = Deadline(started + self.settings.consolidation_budget_seconds)
        inputs = self._inputs(snap, consolidated, budget, self._progress)
        decision = decide(inputs, self._pending, self._scheduler, self.settings)
        elapsed, cpu = time.monotonic() - started, time.thread_time() - cpu_started
        M.EVALUATION_DURATION.labels(method=decision.method or "all").observe(elapsed)
        for deprovisioner, count in decision.eligible.items():
            M.ELIGIBLE_MACHINES.labels(deprovisioner=deprovisioner).set(count)
        if decision.waiting and not self.last_pass.get("waiting"):
            log.info("consolidation waits: %s", decision.waiting)
        self._account(decision, snap.now, elapsed, cpu)
        self.last_decision = decision
        if not consolidated and not decision.waiting:  # a pass whose consolidation waited keeps the last reasons
            self.unconsolidatable = unconsolidatable_reasons(decision)
        self._annotate(decision.annotations, inputs)
        for event in decision.events:
            self._event(event)
        self._pending = decision.pending
        self._due = next_pass_at(decision, snap.now, self.settings)
        if decision.dropped:
            log.info("%s", decision.dropped)
        if decision.execute is not None:
            self._idle_since = None
            self._start(decision.execute, snap.now, self._drifts(decision.execute, inputs))
        elif decision.idle:
            self._idle_since = (generation, snap.now) if not consolidated else self._idle_since
        else:
            self._idle_since = None

    def _consolidated(self, generation: int, now: float) -> bool:
        if self._idle_since is None:
            return False
        gen, since = self._idle_since
        if gen != generation or now - since >= self.settings.consolidated_reset_seconds:
            self._idle_since = None
            return False
        return True

    def _mark(self, snap: Snapshot, consolidated: bool) -> None:
        """Only the node markers (`decide.mark`): what a change between two passes still gets."""
        inputs = self._inputs(snap, consolidated)
        self._annotate(mark(inputs), inputs)

    def _inputs(
        self, snap: Snapshot, consolidated: bool, budget: Deadline | None = None, progress: Progress | None = None
    ) -> Inputs:
        # the same resolved node templates as provisioning (a missing one: no types, no replacement)
        types = instance_types_for(snap, self._cloud)
        drift = self.drift.inputs(snap, types)
        # the pods' last provisioning evaluations (the scale-up rule): a full pass's, not the markers'
        evaluations = self.decisions.outcomes("pod/") if budget is not None else None
        return Inputs.of(snap, types.types, consolidated, budget, progress, drift, evaluations, self._displacements)

    @staticmethod
    def _drifts(cmd: Command, inputs: Inputs) -> dict[str, Drift]:
        if cmd.deprovisioner != DRIFT:
            return {}
        found = {c.name: node_drift(c.node, inputs) for c in cmd.candidates}
        return {name: d for name, d in found.items() if d is not None}

    def _account(self, decision: PassResult, now: float, elapsed: float, cpu: float) -> None:
        """Keep where the pass stopped, and say how long it took (wall, and the CPU of the thread
        that ran it: on a loaded machine the two differ several-fold) and what it covered."""
        self._progress = decision.progress  # an incomplete pass is not idle: the next tick continues
        M.PASS_SECONDS.set(elapsed)
        M.PASS_CPU_SECONDS.set(cpu)
        M.PASS_COMPLETE.set(0 if decision.incomplete else 1)
        if decision.incomplete:
            M.CONSOLIDATION_TIMEOUTS.labels(
                consolidation_type=M.CONSOLIDATION_TYPES.get(decision.method, decision.method)
            ).inc()
        if decision.covered:  # a pass that reached the consolidation methods
            for method in self._covered_methods - decision.covered.keys():  # not reached this pass: none
                M.CANDIDATES_COVERED.labels(method=method).set(0)
            for method, count in decision.covered.items():
                M.CANDIDATES_COVERED.labels(method=method).set(count)
            self._covered_methods |= decision.covered.keys()
            self.last_pass = {
                "time": format_timestamp(now),
                "seconds": round(elapsed, 3),
                "cpuSeconds": round(cpu, 3),
                "complete": not decision.incomplete,
                "stoppedIn": decision.method if decision.incomplete else "",
                "waiting": decision.waiting,
                "eligible": decision.eligible.get(CONSOLIDATION, 0),
                "covered": dict(decision.covered),
            }

    def outlooks(self) -> dict[str, Outlook]:
        """What would happen to each owned node now (`outlook.py`), from a fresh snapshot."""
        snap = self._state.snapshot()
        consolidated = self._idle_since is not None
        inputs = self._inputs(snap, consolidated)
        executing = self._execution.command if self._execution is not None else None
        underway = underway_of(self.last_decision, executing, self.settings.validation_wait_seconds)
        return node_outlooks(inputs, underway, self.unconsolidatable)

    # Acting ------------------------------------------------------------------------------------

    def _annotate(self, annotations: Sequence[Annotate], inputs: Inputs) -> None:
        for a in annotations:
            try:
                self._kube.patch(NODES, a.node, {"metadata": {"annotations": {a.key: a.value}}})
            except KubeError as err:  # a conflict or a vanished node: the next pass recomputes
                log.debug("annotating node %s: %s", a.node, err)
                continue
            if a.key == L.VOLUNTARY_DISRUPTION and a.value == DRIFTED:
                self._marked_drifted(a.node, inputs)

    def _marked_drifted(self, name: str, inputs: Inputs) -> None:
        node = inputs.node(name)
        drift = node_drift(node, inputs) if node is not None else None
        if node is None or drift is None:
            return
        provisioner = node.labels.get(L.PROVISIONER_NAME, "")
        log.info("node %s drifted: %s", name, drift.message)
        M.MACHINES_DISRUPTED.labels(type=DRIFT, provisioner=provisioner).inc()
        M.MACHINES_DRIFTED.labels(type=str(drift.reason), provisioner=provisioner).inc()
        self.decisions.record(decisionlog.drifted(name, provisioner, drift))

    def _event(self, event: Event) -> None:
        self.recorder.publish(E.node_event(event))

    def _start(self, cmd: Command, now: float, drifts: Mapping[str, Drift]) -> None:
        log.info("deprovisioning via %s %s", cmd.deprovisioner, cmd)
        M.ACTIONS_PERFORMED.labels(action=cmd.reason, deprovisioner=cmd.deprovisioner).inc()
        if cmd.action is Action.DELETE:
            self._state.mark_for_deletion(cmd.node_names)
            kept = self._delete(cmd)
            self.decisions.record(decisionlog.carried_out(cmd, drifts))
            moves = any(cand.pods for cand in cmd.candidates)
            self._execution = Execution(cmd, (), now, deleted=now, kept=kept, moves_pods=moves)
            return
        cordoned = self._cordon(cmd.node_names)
        if len(cordoned) < len(cmd.node_names):
            # a candidate left schedulable would take new pods while its replacement comes up: the
            # command stops before it launches anything (as Karpenter's does), its cordons lifted
            missing = sorted(set(cmd.node_names) - set(cordoned))
            self.decisions.record(decisionlog.failed(cmd, f"cordoning {', '.join(missing)} failed"))
            for name, obj in cordoned.items():
                self._uncordon(name, obj)
            return
        launched: list[str] = []
        try:
            for new in cmd.replacements:
                launched.append(self._launcher.launch(new, cmd.reason))
        except Exception as err:
            log.error("launching replacement for %s: %s", cmd.reason, err)
            self.decisions.record(decisionlog.carried_out(cmd, drifts, launched))
            self.decisions.record(decisionlog.failed(cmd, f"launching a replacement: {err}"))
            for name, obj in cordoned.items():
                self._uncordon(name, obj)
            for name in launched:  # keep what launched: it is ordinary capacity now, consolidation may remove it
                log.info("replacement node %s stays as capacity", name)
            return
        # recorded once it acts (candidates cordoned and marked, replacements launched), with the
        # replacement Nodes: the savings ledger counts it only once it took effect (`explain/savings.py`)
        self.decisions.record(decisionlog.carried_out(cmd, drifts, launched))
        self._state.mark_for_deletion(cmd.node_names)
        for name in launched:
            self._event(Event(name, E.LAUNCHING, f"Launching node for {cmd}"))
        self._execution = Execution(cmd, tuple(launched), now)

    def _follow(self, snap: Snapshot) -> None:
        ex = self._execution
        assert ex is not None
        if ex.deleted is not None:
            return self._follow_deletion(ex, snap)
        waiting = []
        for name in ex.replacements:
            view = snap.nodes.get(name)
            if view is None:
                if snap.now - ex.started > VANISHED_AFTER_SECONDS:
                    return self._fail(f"replacement node {name} disappeared", snap)
                waiting.append(name)
            elif not view.initialized:
                waiting.append(name)
        if waiting:
            if snap.now - ex.started > self.settings.replacement_timeout_seconds:
                return self._fail(f"replacement nodes {', '.join(waiting)} never initialized", snap)
            for name in waiting:
                self._event(Event(name, E.WAITING_READINESS, E.WAITING_READINESS_MESSAGE))
            return None
        M.REPLACEMENT_INITIALIZED.observe(max(0.0, snap.now - ex.started))
        ex.kept = self._delete(ex.command)
        ex.deleted = snap.now
        return None

    def _follow_deletion(self, ex: Execution, snap: Snapshot) -> None:
        assert ex.deleted is not None
        remaining = [name for name in ex.command.node_names if name in snap.nodes and name not in ex.kept]
        if not remaining:
            self._ended(snap.now)
            return
        if snap.now - ex.deleted > self.settings.deletion_timeout_seconds:
            log.error(
                "deprovisioning via %s: nodes %s not gone after deletion", ex.command.reason, ", ".join(remaining)
            )
            self._ended(snap.now)
            return
        for name in remaining:
            self._event(Event(name, E.WAITING_DELETION, E.WAITING_DELETION_MESSAGE))

    def _fail(self, why: str, snap: Snapshot) -> None:
        ex = self._execution
        assert ex is not None
        log.error("deprovisioning via %s failed: %s", ex.command.deprovisioner, why)
        M.REPLACEMENT_LAUNCH_FAILED.labels(deprovisioner=ex.command.reason).inc()
        self.decisions.record(decisionlog.failed(ex.command, why))
        self._state.unmark_for_deletion(ex.command.node_names)
        self._ended(snap.now)
        for name in ex.command.node_names:
            node = snap.nodes.get(name)
            if node is not None and not node.deleting:
                self._uncordon(name, node.obj)

    def _ended(self, now: float) -> None:
        """The command in progress is over: its span is kept while nodes that arrived for its pods
        may still settle (`Inputs.settling`)."""
        ex = self._execution
        assert ex is not None
        self._execution = None
        horizon = DISPLACED_SECONDS + SETTLE_SECONDS
        self._displacements = [d for d in self._displacements if d.ended + horizon > now]
        if ex.moves_pods:  # a command that moved no pod (empty nodes deleted) launched nothing for them
            self._displacements.append(Displacement(ex.started, now, frozenset(ex.command.node_names)))

    def _delete(self, cmd: Command) -> tuple[str, ...]:
        """Delete the candidates' Nodes; the names whose delete failed (e.g. refused while this
        replica could not renew its Lease), which stay: unmarked, not waited for — the command is
        over once the others are gone, instead of holding every later one for the deletion
        timeout while provisioning re-places their pods each pass."""
        kept: list[str] = []
        for cand in cmd.candidates:
            self._event(Event(cand.name, E.TERMINATING, f"Deprovisioning node via {cmd}"))
            try:
                self._kube.delete(NODES, cand.name)
            except NotFoundError:
                pass
            except KubeError as err:
                log.error("deleting node %s: %s", cand.name, err)
                kept.append(cand.name)
                continue
            log.info("deleted node %s", cand.name)
            M.NODES_TERMINATED.labels(reason=cmd.reason, provisioner=cand.provisioner.name).inc()
            M.MACHINES_TERMINATED.labels(reason=cmd.reason, provisioner=cand.provisioner.name).inc()
        if kept:
            self._state.unmark_for_deletion(kept)
        return tuple(kept)

    def _cordon(self, names: Sequence[str]) -> dict[str, Obj]:
        """Cordon and mark each node; the nodes as patched, by name."""
        out = {}
        for name in names:
            try:
                out[name] = self._kube.patch(NODES, name, cordon_patch())
                log.info("cordoned node %s", name)
            except KubeError as err:
                log.error("cordoning node %s: %s", name, err)
        return out

    def _uncordon(self, name: str, obj: Mapping[str, Any]) -> None:
        """Lift karpy's deprovisioning cordon of `obj` (as last seen; a node changed since is a
        conflict, left to the next pass). A node also held for binding stays cordoned until
        provisioning releases it."""
        meta = obj.get("metadata") or {}
        held = BINDING_HOLD in (meta.get("annotations") or {})
        try:
            self._kube.patch(NODES, name, uncordon_patch(str(meta.get("resourceVersion") or ""), held))
        except NotFoundError:
            return
        except ConflictError:
            log.debug("uncordoning node %s: changed meanwhile, next pass", name)
            return
        except KubeError as err:
            log.error("uncordoning node %s: %s", name, err)
            return
        log.info("uncordoned node %s", name)

    def _lift_stale_cordons(self, snap: Snapshot) -> None:
        """Uncordon nodes karpy cordoned for a command that no longer runs (a killed controller's)."""
        in_progress = self._execution.command.node_names if self._execution is not None else ()
        for node in stale_cordons(snap.nodes.values(), in_progress):
            log.info("node %s is cordoned for a deprovisioning action that is no longer running", node.name)
            self._uncordon(node.name, node.obj)
