"""`ProvisioningController`: pending pods → new nodes → bound pods (spec §5.1–5.2, §5.9).

`reconcile()` is the `provisioning` job's whole body (APScheduler calls it every tick; tests
call it directly with a `FakeClock`): snapshot → decide → act.

1. Nothing happens until cluster state is synced.
2. Every provisionable pod not seen before (or still pending after `retry_seconds`, 10 s)
   triggers the batcher; when its window closes, a fresh snapshot is scheduled with
   `controller.scheduling.scheduler.schedule()`.
3. Each new node is launched (`launcher.Launcher`) held cordoned (`nodes.BINDING_HOLD`). Pods
   gated by karpy's topology gate are pinned to the domain of the node planned for them and
   released to kube-scheduler (`spreadpin.py`), once every node of the batch exists — except
   while a pod their spread counts escaped the gate and waits for kube-scheduler: they keep
   their gate, with a "waiting" evaluation, until it is placed; and such an escaped pod is not
   provisioned for while a pinned pod of its group is not bound (`state/spreadhold.py`). Once
   the batch is launched, each planned pod that `bindcheck.refusal()` accepts against a fresh
   snapshot is bound (Binding subresource); then every held node is released at once. Pods
   karpy does not bind — placed on existing nodes, depending on pods of other nodes (zonal
   spread or (anti-)affinity), or not tolerating a startup taint — are left to kube-scheduler,
   which sees the new nodes; with `bind_pods` off it binds them all. Each such pod is told where
   karpy expects it, `status.nominatedNodeName` (`nominations.py`: for a held node when it is
   released), so kube-scheduler keeps that room for it instead of giving it to the next pod.
   A pass's nodes are launched in parallel (`launch_workers`), as Karpenter launches a batch's
   machines, so the cloud provider can merge identical launches into one call (CreateFleet,
   `cloudprovider/batcher.py`): every instance of the pass is created first, identical requests
   side by side (so they reach the provider's window together), then their Node objects; the
   outcomes are handled in plan order.
4. Pods that could not be placed, or whose launch failed, get a `FailedScheduling` event and a
   decision record, and stay pending: they are retried in the next window.
5. A launch the cloud throttled (`LaunchError.retry_after`, RequestLimitExceeded) is no failure:
   the pass starts no further launch, its remaining pods wait (`ProvisioningPass.deferred`, a
   "waiting" evaluation, no event) and are retried once the cloud's bucket has refilled.

At scale (issue 21): every pending pod is considered in every pass — no cap, no rotation; the
solver's cost is per pod signature, so thousands of pods that never fit cost little and do not
keep a small pod behind them from its node. Every pod of a pass gets its evaluation (time,
outcome — launched, nominated, unschedulable, launch-failed, ignored — and reason) in the decision
log (`DecisionLog.evaluated`), read by `/api/v1/pods/pending`, the dashboard and `karpy explain
pod`; pods that are gone are forgotten (every `RETAIN_SECONDS`, not every tick).
`FailedScheduling` events are written for at most `FAILED_SCHEDULING_EVENTS_PER_PASS` pods a pass
(the recorder's 2-minute de-duplication makes that a rotation over the unschedulable pods), so
10,000 unschedulable pods do not make a pass wait on 10,000 API writes. The pass's duration and
the pods it considered are metrics.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import dataclass, field

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.clock import Clock
from controller.cloudprovider.base import CloudProvider, Instance
from controller.core.labels import BINDING_HOLD, DEPROVISIONING_CORDON
from controller.decisions import (
    IGNORED,
    LAUNCH_FAILED,
    LAUNCHED,
    NOMINATED,
    UNSCHEDULABLE,
    WAITING,
    Decision,
    DecisionLog,
)
from controller.events import EventRecorder
from controller.kube.client import Kube
from controller.kube.errors import ConflictError, KubeError, NotFoundError
from controller.kube.resources import NODES, PODS
from controller.provisioning import events
from controller.provisioning.batcher import Batcher
from controller.provisioning.bindcheck import BindContext, refusal
from controller.provisioning.launcher import Launcher, LaunchError, LaunchResult
from controller.provisioning.metrics import PASS_DURATION, PODS_CONSIDERED, SCHEDULING_DURATION, SIMULATION_DURATION
from controller.provisioning.nodes import BINDING_HOLD_SECONDS, release_patch
from controller.provisioning.nodetemplates import instance_types_for
from controller.provisioning.nominations import NOMINATIONS_PER_PASS, Nomination, nominations, status_patch
from controller.provisioning.spreadpin import Pinner
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import NewNode, PodRequest, SchedulingResult, SchedulingSettings
from controller.state.cluster import ClusterState
from controller.state.schedulinginput import Provisionable, provisionable, provisioning_input
from controller.state.snapshot import PodView, ProvisionerView, Snapshot

log = logging.getLogger(__name__)

NOMINATED_EVENTS_PER_BATCH = 10  # Karpenter rate-limits Nominated events (burst 10)
RETAIN_SECONDS = 10.0  # how often the evaluations of pods that are gone are forgotten
FAILED_SCHEDULING_EVENTS_PER_PASS = 100  # the rest of a pass's unschedulable pods: told in later passes


@dataclass(frozen=True)
class ProvisioningSettings:
    batch_idle_seconds: float = 1.0
    batch_max_seconds: float = 10.0
    bind_pods: bool = True
    retry_seconds: float = 10.0
    max_instance_types: int = 60
    bind_workers: int = 16
    launch_workers: int = 64  # a pass's nodes are launched in parallel, as Karpenter does

    @property
    def nomination_seconds(self) -> float:
        return max(2 * self.batch_max_seconds, 10.0)


@dataclass
class ProvisioningPass:
    """What one provisioning pass did (returned for tests and logs)."""

    launched: list[str] = field(default_factory=list)
    bound: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    deferred: dict[str, str] = field(default_factory=dict)  # pod → why its launch waits (cloud throttled)
    unschedulable: dict[str, str] = field(default_factory=dict)
    nominated: dict[str, str] = field(default_factory=dict)  # pod → node written as its nomination ("": cleared)
    nomination_writes: int = 0  # attempted, successful or not (bounded a pass)


class ProvisioningController:
    name = "provisioning"

    def __init__(
        self,
        state: ClusterState,
        kube: Kube,
        cloud: CloudProvider,
        clock: Clock,
        recorder: EventRecorder,
        decisions: DecisionLog,
        settings: ProvisioningSettings | None = None,
    ) -> None:
        self.state, self.kube, self.cloud, self.clock = state, kube, cloud, clock
        self.recorder, self.decisions = recorder, decisions
        self.settings = settings or ProvisioningSettings()
        self.batcher = Batcher(clock, self.settings.batch_idle_seconds, self.settings.batch_max_seconds)
        self.launcher = Launcher(kube, cloud, state, clock, self.settings.nomination_seconds)
        self._last_try: dict[str, float] = {}
        self._held: dict[str, str] = {}  # held zonal-spread pod → the reason it was told
        self._batch_taken = 0.0  # when the last batch's snapshot was taken
        self._retained = float("-inf")  # when the evaluations of gone pods were last forgotten
        self._templates: dict[str, AWSNodeTemplate | None] = {}
        self._pool = ThreadPoolExecutor(self.settings.bind_workers, thread_name_prefix="bind")
        self._launches = ThreadPoolExecutor(self.settings.launch_workers, thread_name_prefix="launch")
        self.pinner = Pinner(kube, state)

    def reconcile(self) -> ProvisioningPass | None:
        snap = self.state.snapshot()
        if not snap.synced:
            return None
        self._release_stale(snap)
        found = provisionable(snap, ordered=False)  # every tick: only looked up, no order needed
        for pod, _ in found.ignored:  # not karpy's to place: kube-scheduler decides, as before
            self.pinner.release(pod)
        self._tell_held(found.held)
        if snap.now - self._retained >= RETAIN_SECONDS:  # forget the pods that are gone (not every tick)
            self._retained = snap.now
            self.decisions.retain("pod/", {f"pod/{key}" for key in snap.pods})
        self._trigger(found, snap.now)
        if not self.batcher.ready(lambda: any(p.queued for p in snap.unbound_pods())):
            return None  # closed at its maximum while kube-scheduler has pods to decide (`batcher.py`)
        self.batcher.reset()
        snap = self.state.snapshot()
        self._batch_taken = snap.now
        found = provisionable(snap)
        for pod, why in found.ignored:
            self.decisions.evaluated(Decision(self.name, IGNORED, f"pod/{pod.key}", why))
        if not found.pending and not found.rescheduled:
            return None
        started = time.monotonic()
        try:
            return self._provision(snap, found)
        finally:
            PASS_DURATION.observe(time.monotonic() - started)

    def _tell_held(self, held: Sequence[tuple[PodView, str]]) -> None:
        """Each held zonal-spread pod's evaluation says why it waits (`state/spreadhold.py`), told
        once per reason; nothing is written to it (a gated one keeps its gate)."""
        told, current = self._held, {pod.key: why for pod, why in held}
        for key in told.keys() - current.keys():
            del told[key]
        new = [(pod, why) for pod, why in held if told.get(pod.key) != why]
        for pod, why in new:
            told[pod.key] = why
            self.decisions.evaluated(Decision(self.name, WAITING, f"pod/{pod.key}", why), log=False)
        if new:
            first, why = new[0]
            log.info("%d zonal-spread pod(s) wait for their group (the first, %s: %s)", len(new), first.key, why)

    def _trigger(self, found: Provisionable, now: float) -> None:
        """Open or extend the batch window for pods seen for the first time (from when
        kube-scheduler marked them, but not before the last batch was taken) and for pods whose
        retry is due (now). Runs every tick over every pending pod: set differences find the new
        and the gone, one pass over the last tries the due, so a tick costs little at 20,000."""
        pods = {p.key: p for p in (*found.pending, *found.rescheduled)}
        last_try = self._last_try
        for key in last_try.keys() - pods.keys():
            del last_try[key]
        for key in pods.keys() - last_try.keys():
            pod = pods[key]
            if _waiting(pod):
                continue
            last_try[key] = now
            since = pod.unschedulable_since
            self.batcher.trigger(max(since, self._batch_taken) if since else None)
        retry = self.settings.retry_seconds
        due = [key for key, last in last_try.items() if now - last >= retry and not _waiting(pods[key])]
        for key in due:
            last_try[key] = now
        if due:
            self.batcher.trigger()

    def _provision(self, snap: Snapshot, found: Provisionable) -> ProvisioningPass:
        outcome = ProvisioningPass()
        by_provisioner = instance_types_for(snap, self.cloud)
        self._templates = by_provisioner.templates
        inp = provisioning_input(
            snap, found, by_provisioner.types, SchedulingSettings(self.settings.max_instance_types)
        )
        PODS_CONSIDERED.set(len(inp.pods))
        started = time.monotonic()
        result = schedule(inp)
        SCHEDULING_DURATION.observe(time.monotonic() - started)
        SIMULATION_DURATION.observe(time.monotonic() - started)
        log.info(
            "scheduled %d pod(s): %d new node(s), %d on existing node(s), %d unschedulable",
            len(inp.pods), len(result.new_nodes), sum(len(v) for v in result.existing_assignments.values()),
            len(result.unschedulable),
        )  # fmt: skip
        pending = {p.key: p for p in found.pending}
        missing = "; ".join(by_provisioner.missing[n] for n in sorted(by_provisioner.missing))
        told = 0
        for key, why in result.unschedulable.items():
            if missing:  # a Provisioner without its AWSNodeTemplate could not be considered
                why = f"{why}; {missing}"
            outcome.unschedulable[key] = why
            reason = result.reasons.get(key)
            extra = {"clauses": [c.to_json() for c in reason.clauses]} if reason is not None else {}
            self.decisions.evaluated(Decision(self.name, UNSCHEDULABLE, f"pod/{key}", why, extra=extra))
            if key in pending and told < FAILED_SCHEDULING_EVENTS_PER_PASS:
                told += self.recorder.publish(events.failed_scheduling(pending[key], why))
        self._launch_all(snap, result, pending, outcome)
        planned = self._bind_existing(snap, result, pending, outcome)
        self._nominate(planned, outcome, clear_stale=True)
        return outcome

    def _launch_all(
        self, snap: Snapshot, result: SchedulingResult, pending: dict[str, PodView], outcome: ProvisioningPass
    ) -> None:
        usage = {name: snap.provisioner_usage(name) for name in snap.provisioners}
        nominated_events = 0
        held: list[tuple[str, tuple[str, ...]]] = []
        free: list[tuple[str, str]] = []  # (pod, node) planned onto a node launched without a hold
        pins: list[tuple[PodView, Mapping[str, str]]] = []
        for name in snap.provisioners:
            usage.setdefault(name, {})
        planned = [
            (node, view)
            for node in result.new_nodes
            if (view := snap.provisioners.get(node.provisioner)) is not None and view.spec is not None
        ]
        throttled: list[LaunchError] = []  # the first throttled launch: the cloud refuses launches for now

        def create(node: NewNode, view: ProvisionerView) -> Instance | LaunchError:
            if throttled:  # no call, no failure: its pods wait
                return throttled[0]
            assert view.spec is not None
            try:
                return self.launcher.create_instance(
                    node, view.spec, usage[node.provisioner], node_template=self._templates.get(node.provisioner)
                )
            except LaunchError as err:
                if err.retry_after is not None:
                    throttled.append(err)
                    log.info("%s", err)
                return err

        def register(node: NewNode, view: ProvisionerView, made: Instance | LaunchError) -> LaunchResult | LaunchError:
            if isinstance(made, LaunchError):
                return made
            assert view.spec is not None
            try:
                return self.launcher.register(
                    node, made, view.spec, usage[node.provisioner], owner=view.obj,
                    hold_for_binding=self.settings.bind_pods, node_template=self._templates.get(node.provisioner),
                )  # fmt: skip
            except LaunchError as err:
                return err

        # In parallel, every cloud call of the pass before any Kubernetes write, and identical
        # requests next to each other: launches the cloud provider can merge into one call
        # (CreateFleet, `cloudprovider/batcher.py`) reach it at the same moment. Outcomes are then
        # handled in plan order.
        order = sorted(range(len(planned)), key=lambda i: _request_identity(planned[i][0]))
        created = self._launches.map(lambda i: copy_context().run(create, *planned[i]), order)
        made = dict(zip(order, created, strict=True))
        results = list(self._launches.map(lambda i: copy_context().run(register, *planned[i], made[i]), order))
        results = [r for _, r in sorted(zip(order, results, strict=True), key=lambda pair: pair[0])]
        for (node, _view), launched in zip(planned, results, strict=True):
            pod_keys = tuple(p.key for p in node.pods)
            if isinstance(launched, LaunchError):
                err = launched
                if err.retry_after is not None:
                    self._defer(pod_keys, err, snap.now, outcome)
                    continue
                log.warning("%s", err)
                for key in pod_keys:
                    outcome.failed[key] = str(err)
                    self.decisions.evaluated(Decision(self.name, LAUNCH_FAILED, f"pod/{key}", str(err)), log=False)
                    if key in pending:
                        self.recorder.publish(events.failed_scheduling(pending[key], str(err)))
                subject = f"provisioner/{node.provisioner}"
                self.decisions.record(Decision(self.name, LAUNCH_FAILED, subject, str(err), pod_keys, node.provisioner))
                continue
            inst = launched.instance
            outcome.launched.append(launched.node_name)
            self.decisions.record(
                Decision(
                    self.name, LAUNCHED, f"node/{launched.node_name}", "pods did not fit on existing nodes",
                    pod_keys, node.provisioner, inst.instance_type, inst.zone, inst.capacity_type, inst.price,
                )
            )  # fmt: skip
            for key in pod_keys:
                self.decisions.evaluated(
                    Decision(
                        self.name, LAUNCHED, f"pod/{key}", f"a new node {launched.node_name} was launched for it",
                        (), node.provisioner, inst.instance_type, inst.zone, inst.capacity_type, inst.price,
                        extra={"node": launched.node_name},
                    ),
                    log=False,
                )  # fmt: skip
            for key in [k for k in pod_keys if k in pending][: max(0, NOMINATED_EVENTS_PER_BATCH - nominated_events)]:
                self.recorder.publish(events.nominated(pending[key], launched.node_name))
                nominated_events += 1
            labels = (launched.node.get("metadata") or {}).get("labels") or {}
            pins += [(pending[k], labels) for k in pod_keys if k in pending and pending[k].topology_gated]
            mine = tuple(k for k in pod_keys if k in pending)
            if self.settings.bind_pods:
                held.append((launched.node_name, mine))
            else:  # not held: kube-scheduler binds every pod, told where karpy expects it
                free += [(key, launched.node_name) for key in mine]
        self._pin(pins)  # every planned node exists now: its domain is decided
        self._nominate(free, outcome)
        if held:
            # Bind against the cluster as it is now, not as the plan saw it; then tell
            # kube-scheduler where the pods karpy did not bind are expected (not before: tried on
            # a held node, a pod fails and kube-scheduler clears its nomination) and release
            # every held node at once, so kube-scheduler sees all the batch's new domains together.
            ctx = BindContext.of(self.state.snapshot(), snap.daemonset_pods)
            bound = self._bind(ctx, dict(held))
            outcome.bound += bound
            done = set(bound)
            self._nominate([(k, node) for node, keys in held for k in keys if k not in done], outcome)
            for node_name, _ in held:
                self._release(node_name)

    def _defer(self, pod_keys: Sequence[str], err: LaunchError, now: float, outcome: ProvisioningPass) -> None:
        """The cloud throttled this pass's launches: the pods wait, retried once `err.retry_after`
        has passed (their last try moved so `_trigger` finds them due then), nothing failed."""
        retry_after = err.retry_after or 0.0
        for key in pod_keys:
            outcome.deferred[key] = str(err)
            self._last_try[key] = now - self.settings.retry_seconds + retry_after
            self.decisions.evaluated(Decision(self.name, WAITING, f"pod/{key}", str(err)), log=False)

    def _bind_existing(
        self, snap: Snapshot, result: SchedulingResult, pending: dict[str, PodView], outcome: ProvisioningPass
    ) -> list[tuple[str, str]]:
        """Pods planned onto existing nodes are nominated, not bound: those nodes are not held, so
        kube-scheduler (which binds there on its own) decides, and no two binders race. Gated
        pods are pinned to the node's domains (`spreadpin.py`). Returns (pod, node) to nominate."""
        pins: list[tuple[PodView, Mapping[str, str]]] = []
        planned: list[tuple[str, str]] = []
        for node_name, keys in result.existing_assignments.items():
            node = snap.nodes.get(node_name)
            if node is None or node.marked_for_deletion:
                continue
            self.state.nominate([node_name], snap.now + self.settings.nomination_seconds)
            for key in keys:
                why = f"fits on node {node_name}: left to kube-scheduler"
                self.decisions.evaluated(
                    Decision(self.name, NOMINATED, f"pod/{key}", why, extra={"node": node_name}), log=False
                )
            pins += [(pending[k], node.labels) for k in keys if k in pending and pending[k].topology_gated]
            planned += [(k, node_name) for k in keys if k in pending]
        self._pin(pins)
        return planned

    def _nominate(
        self, planned: Sequence[tuple[str, str]], outcome: ProvisioningPass, clear_stale: bool = False
    ) -> None:
        """Write the nominations `nominations.py` decides for `planned` (pod, node) against the
        cluster as it is now (and with `clear_stale` the stale ones' clearing), in parallel;
        at most `NOMINATIONS_PER_PASS` writes a pass."""
        room = NOMINATIONS_PER_PASS - outcome.nomination_writes
        if room <= 0 or (not planned and not clear_stale):
            return
        todo = nominations(self.state.snapshot(), planned, room, clear_stale)
        outcome.nomination_writes += len(todo)
        written = 0
        for n, ok in zip(todo, self._pool.map(self._write_nomination, todo), strict=True):
            if ok:
                outcome.nominated[n.pod.key] = n.node
                written += 1
        if todo:
            log.info("nominations for kube-scheduler: %d of %d written", written, len(todo))

    def _write_nomination(self, n: Nomination) -> bool:
        pod = n.pod
        try:
            patch = status_patch(n.node)
            updated = self.kube.patch(PODS, pod.name, patch, namespace=pod.namespace, subresource="status")
        except NotFoundError:
            return False  # gone meanwhile
        except (KubeError, OSError) as err:
            log.warning("nominating pod %s to node %r: %s", pod.key, n.node, err)
            return False
        self.state.apply(PODS.name, "MODIFIED", updated)
        return True

    def _pin(self, pins: Sequence[tuple[PodView, Mapping[str, str]]]) -> None:
        """Lift the topology gate of each pod with its node's domains pinned, in parallel."""
        list(self._pool.map(lambda item: self.pinner.pin(*item), pins))

    def _release(self, node: str, keep_cordoned: bool = False) -> None:
        try:
            self.kube.patch(NODES, node, release_patch(keep_cordoned))
        except NotFoundError:
            pass
        except (KubeError, OSError) as err:  # released later by _release_stale
            log.warning("uncordoning node %s after binding: %s", node, err)

    def _release_stale(self, snap: Snapshot) -> None:
        """Release binding holds a killed controller left behind (a node deprovisioning has
        cordoned meanwhile stays cordoned: deprovisioning lifts that cordon itself)."""
        for node in snap.nodes.values():
            held = BINDING_HOLD in node.annotations and not node.deleting and not node.in_flight
            if held and snap.now - node.created > BINDING_HOLD_SECONDS:
                self._release(node.name, keep_cordoned=DEPROVISIONING_CORDON in node.annotations)

    def _bind(self, ctx: BindContext, planned: Mapping[str, Iterable[str]]) -> list[str]:
        """Bind the planned pods (per held node) that `bindcheck` accepts, in rounds: each pod is
        checked against its node as it is now plus the pods accepted for that node before it; a
        round — every node's accepted pods, bound in parallel — completes before the next is
        checked, so a pod whose affinity needs a partner is bound after the partner's binding
        succeeded. The pods never accepted are left pending."""
        done: list[str] = []
        bound: dict[str, list[PodRequest]] = {node: [] for node in planned}
        remaining = {node: list(keys) for node, keys in planned.items()}
        refused: dict[str, dict[str, str]] = {}
        while remaining:
            accepted: list[tuple[PodView, str]] = []
            for node, keys in remaining.items():
                refused[node], placed = {}, list[PodRequest]()
                for key in keys:
                    why = refusal(ctx, key, node, placed, bound[node])
                    pod = ctx.snapshot.pods.get(key)
                    if why or pod is None or pod.request is None:
                        refused[node][key] = why
                        continue
                    accepted.append((pod, node))
                    placed.append(pod.request)
            if not accepted:
                break
            succeeded = set(self._bind_round(accepted))
            progressed = set()
            for pod, node in accepted:
                if pod.key in succeeded and pod.request is not None:
                    done.append(pod.key)
                    bound[node].append(pod.request)
                progressed.add(node)
            remaining = {node: list(refused[node]) for node in progressed if refused[node]}
        for node, why_not in refused.items():  # one line per node and reason (thousands of pods at 20,000)
            by_reason: dict[str, list[str]] = {}
            for key, why in why_not.items():
                by_reason.setdefault(why, []).append(key)
                log.debug("not binding pod %s to %s: %s", key, node, why)
            for why, keys in by_reason.items():
                log.info("not binding %d pod(s) to %s (the first, %s): %s", len(keys), node, keys[0], why)
        return done

    def _bind_round(self, accepted: list[tuple[PodView, str]]) -> list[str]:
        def one(item: tuple[PodView, str]) -> str | None:
            pod, node = item
            try:
                self.kube.bind(pod.namespace, pod.name, node)
            except (ConflictError, NotFoundError):
                return None  # bound by someone else meanwhile, or gone
            except (KubeError, OSError) as err:
                log.warning("binding pod %s to %s: %s", pod.key, node, err)
                return None
            self.state.record_binding(pod.key, node)
            return pod.key

        return [key for key in self._pool.map(one, accepted) if key]

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self._launches.shutdown(wait=True)


def _request_identity(node: NewNode) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """What makes two planned nodes the same launch request to any provider: provisioner,
    instance-type options and requirements (only an ordering key; the provider decides merges)."""
    requirements = tuple(sorted(f"{key}={req!r}" for key, req in node.requirements.items()))
    return node.provisioner, tuple(it.name for it in node.instance_type_options), requirements


def _waiting(pod: PodView) -> bool:
    """A pending pod pinned by karpy and waiting for kube-scheduler (`spread_pinned`, neither
    marked nor gated): counted by a batch, opens none."""
    return not pod.node_name and not (pod.unschedulable or pod.topology_gated)
