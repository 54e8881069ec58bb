"""The deprovisioning controller: `reconcile()` = snapshot → decide → act, one action at a time.

Each call reads cluster state (nothing happens until it is synced), wraps its snapshot in the
pass's `Inputs` and lets `decide()` pick at most one command (spec §6.2). Nothing blocks: a
consolidation command waiting for its validation time is kept (`_pending`) and re-checked on a
later call; a replacement in progress (`_execution`) is followed across calls until every
replacement node is initialized, then the candidate Nodes are deleted (the termination
finalizer drains and terminates them). Spec §6.7: replace = cordon, launch, mark for deletion,
wait for initialized, delete; a failed launch or a replacement that never comes uncordons and
unmarks. The cordon carries karpy's deprovisioning mark (`cordon.py`), and every pass first
lifts the marked cordons no command in progress holds — those a killed controller left behind.
An idle pass sets the consolidated flag until cluster state changes (or 5 min pass) and the
next full pass waits `poll_period_seconds`.

Each pass's simulations get `consolidation_budget_seconds` of wall time (`Deadline`); a pass
that stops on it keeps where it stopped (`_progress`) and the next pass — at once, not after the
poll period — continues there (anytime, issue 21). The last pass's time, the candidates each
method covered and whether it completed are metrics and `last_pass` (the dashboard's overview).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.clock import Clock
from controller.cloudprovider.base import CloudProvider
from controller.core.labels import BINDING_HOLD
from controller.core.timestamps import format_timestamp
from controller.decisions import DecisionLog
from controller.deprovisioning import decisionlog
from controller.deprovisioning import events as E
from controller.deprovisioning import metrics as M
from controller.deprovisioning.cordon import cordon_patch, stale_cordons, uncordon_patch
from controller.deprovisioning.decide import PassResult, Pending, decide
from controller.deprovisioning.launcher import Launcher
from controller.deprovisioning.outlook import Outlook, node_outlooks, unconsolidatable_reasons, underway_of
from controller.deprovisioning.types import (
    CONSOLIDATION,
    Action,
    Command,
    DeprovisioningSettings,
    Event,
    Inputs,
    Progress,
    Scheduler,
)
from controller.events import EventRecorder
from controller.kube.client import Kube, Obj
from controller.kube.errors import ConflictError, KubeError, NotFoundError
from controller.kube.resources import NODES
from controller.provisioning.nodetemplates import instance_types_for
from controller.scheduling.types import InstanceType
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


def _default_scheduler() -> Scheduler:
    from controller.scheduling.scheduler import schedule

    return schedule


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
        self._scheduler = scheduler or _default_scheduler()
        self.recorder = recorder or EventRecorder(kube, clock)
        self.decisions = decisions or DecisionLog(clock)
        self._pending: Pending | None = None
        self._execution: Execution | None = None
        self._idle_since: tuple[int, float] | None = None  # (state generation, time) the flag was set
        self._last_pass = float("-inf")  # when decide() last ran
        self.last_decision: PassResult | None = None
        self._progress = Progress()  # where the last pass stopped on its budget
        self.last_pass: dict[str, Any] = {}  # its time, duration, coverage (the dashboard's overview)
        self.unconsolidatable: dict[str, str] = {}  # the last consolidation pass's reasons, by node

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
        if consolidated and self._pending is None and snap.now - self._last_pass < self.settings.poll_period_seconds:
            return  # when consolidated, expiration and emptiness still get a pass every poll period
        self._last_pass = snap.now
        started = time.monotonic()
        budget = Deadline(started + self.settings.consolidation_budget_seconds)
        inputs = Inputs.of(snap, self._instance_types(snap), consolidated, budget, self._progress)
        decision = decide(inputs, self._pending, self._scheduler, self.settings)
        elapsed = time.monotonic() - started
        M.EVALUATION_DURATION.labels(method=decision.method or "all").observe(elapsed)
        for deprovisioner, count in decision.eligible.items():
            M.ELIGIBLE_MACHINES.labels(deprovisioner=deprovisioner).set(count)
        self._account(decision, snap.now, elapsed)
        self.last_decision = decision
        if not consolidated:
            self.unconsolidatable = unconsolidatable_reasons(decision)
        self._annotate(decision)
        for event in decision.events:
            self._event(event)
        self._pending = decision.pending
        if decision.dropped:
            log.info("%s", decision.dropped)
        if decision.execute is not None:
            self._idle_since = None
            self._start(decision.execute, snap.now)
        elif decision.idle:
            self._idle_since = (self._state.generation, snap.now) if not consolidated else self._idle_since
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

    def _instance_types(self, snap: Snapshot) -> dict[str, Sequence[InstanceType]]:
        # the same resolved node templates as provisioning (a missing one: no types, no replacement)
        return dict(instance_types_for(snap, self._cloud).types)

    def _account(self, decision: PassResult, now: float, elapsed: float) -> None:
        """Keep where the pass stopped, and say how long it took and what it covered."""
        self._progress = decision.progress  # an incomplete pass is not idle: the next tick continues
        M.PASS_SECONDS.set(elapsed)
        M.PASS_COMPLETE.set(0 if decision.incomplete else 1)
        for method, count in decision.covered.items():
            M.CANDIDATES_COVERED.labels(method=method).set(count)
        if decision.covered:  # a pass that reached the consolidation methods
            self.last_pass = {
                "time": format_timestamp(now),
                "seconds": round(elapsed, 3),
                "complete": not decision.incomplete,
                "stoppedIn": decision.method if decision.incomplete else "",
                "eligible": decision.eligible.get(CONSOLIDATION, 0),
                "covered": dict(decision.covered),
            }

    def outlooks(self) -> dict[str, Outlook]:
        """What would happen to each owned node now (`outlook.py`), from a fresh snapshot."""
        snap = self._state.snapshot()
        consolidated = self._idle_since is not None
        inputs = Inputs.of(snap, self._instance_types(snap), consolidated)
        executing = self._execution.command if self._execution is not None else None
        underway = underway_of(self.last_decision, executing, self.settings.validation_wait_seconds)
        return node_outlooks(inputs, underway, self.unconsolidatable)

    # Acting ------------------------------------------------------------------------------------

    def _annotate(self, decision: PassResult) -> None:
        for a in decision.annotations:
            try:
                self._kube.patch(NODES, a.node, {"metadata": {"annotations": {a.key: a.value}}})
            except KubeError as err:  # a conflict or a vanished node: the next pass recomputes
                log.debug("annotating node %s: %s", a.node, err)

    def _event(self, event: Event) -> None:
        self.recorder.publish(E.node_event(event))

    def _start(self, cmd: Command, now: float) -> None:
        log.info("deprovisioning via %s %s", cmd.deprovisioner, cmd)
        M.ACTIONS_PERFORMED.labels(action=cmd.reason, deprovisioner=cmd.deprovisioner).inc()
        self.decisions.record(decisionlog.carried_out(cmd))
        if cmd.action is Action.DELETE:
            self._state.mark_for_deletion(cmd.node_names)
            self._delete(cmd)
            return
        cordoned = self._cordon(cmd.node_names)
        launched: list[str] = []
        try:
            for new in cmd.replacements:
                launched.append(self._launcher.launch(new, cmd.reason))
        except Exception as err:
            log.error("launching replacement for %s: %s", cmd.reason, err)
            self.decisions.record(decisionlog.failed(cmd, f"launching a replacement: {err}"))
            for name, obj in cordoned.items():
                self._uncordon(name, obj)
            for name in launched:  # keep what launched: it is ordinary capacity now, consolidation may remove it
                log.info("replacement node %s stays as capacity", name)
            return
        self._state.mark_for_deletion(cmd.node_names)
        for name in launched:
            self._event(Event(name, E.LAUNCHING, f"Launching node for {cmd}"))
        self._execution = Execution(cmd, tuple(launched), now)

    def _follow(self, snap: Snapshot) -> None:
        ex = self._execution
        assert ex is not None
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
        self._execution = None
        self._delete(ex.command)
        return None

    def _fail(self, why: str, snap: Snapshot) -> None:
        ex = self._execution
        assert ex is not None
        log.error("deprovisioning via %s failed: %s", ex.command.deprovisioner, why)
        self.decisions.record(decisionlog.failed(ex.command, why))
        self._state.unmark_for_deletion(ex.command.node_names)
        self._execution = None
        for name in ex.command.node_names:
            node = snap.nodes.get(name)
            if node is not None and not node.deleting:
                self._uncordon(name, node.obj)

    def _delete(self, cmd: Command) -> None:
        for cand in cmd.candidates:
            self._event(Event(cand.name, E.TERMINATING, f"Deprovisioning node via {cmd}"))
            try:
                self._kube.delete(NODES, cand.name)
            except NotFoundError:
                pass
            except KubeError as err:
                log.error("deleting node %s: %s", cand.name, err)
                continue
            log.info("deleted node %s", cand.name)
            M.NODES_TERMINATED.labels(reason=cmd.reason, provisioner=cand.provisioner.name).inc()

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
