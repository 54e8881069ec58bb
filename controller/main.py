"""The controller process: settings → wiring → leader-elected APScheduler jobs → graceful exit.

`build(settings, ...)` wires one of everything (clock, Kubernetes adapter, cloud provider,
cluster state, event recorder, decision log, the controllers); `run(settings)` starts the
informers, the HTTP server (`httpserver.py`), leader election and one APScheduler job per
controller (`max_instances=1, coalesce=True`, job id = the controller's `name`), then waits for
SIGTERM/SIGINT. Only the Lease holder's jobs act (every replica keeps its state warm). Shutdown
never stops mid-action: the scheduler is shut down with `wait=True`, so a running
`reconcile()` finishes, the savings ledger stores what it owes, then the Lease is released so a
standby takes over at once.

A configuration `build` cannot start with (`ConfigError`) never ends the process — a deployed
controller would crash-loop: `run` serves `/healthz` and a not-ready `/readyz` and `/api/`
saying why (`configwait.py`), acts on nothing, and — when karpenter-global-settings can fix it
(`settings_problem`) — re-reads that ConfigMap every `SETTINGS_SECONDS` and starts once it works.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from prometheus_client import REGISTRY

from controller import allocator, logs
from controller.capacity import CapacityCollector
from controller.clock import Clock, SystemClock
from controller.cloudhealth import CloudHealth, publish_unavailable
from controller.cloudprovider.base import CloudProvider
from controller.cloudprovider.errors import CloudProviderError
from controller.cloudprovider.metered import MeteredCloud
from controller.configwait import Check, ConfigWait
from controller.decisions import DecisionLog
from controller.deprovisioning.controller import DeprovisioningController
from controller.deprovisioning.launcher import ProvisioningLauncher
from controller.deprovisioning.types import DeprovisioningSettings
from controller.events import EventRecorder
from controller.explain.savings import SavingsLedger
from controller.explain.service import Explainer, post_routes, prefix_routes
from controller.garbagecollection.garbagecollection import GarbageCollectionController
from controller.httpserver import ControllerHTTPServer
from controller.insight import Insight
from controller.kube.access import KubeAccess
from controller.kube.client import Kube, KubeClient
from controller.leaderelection import LeaderElector
from controller.leaderguard import LeaderOnlyCloud, LeaderOnlyKube
from controller.metrics import CALLER, RECONCILE_ERRORS, RECONCILE_TIME, RECONCILE_TOTAL
from controller.nodetemplatestatus import NodeTemplateStatusController
from controller.podmetrics import INTERVAL_SECONDS as POD_METRICS_SECONDS
from controller.podmetrics import PodStartupMetrics
from controller.provisioning.controller import ProvisioningController, ProvisioningSettings
from controller.provisioning.counter import CounterController
from controller.provisioning.initialization import InitializationController
from controller.scheduling.types import InstanceType
from controller.settings import CLUSTER_NAME_REQUIRED, SIMULATED_CLUSTER_NAME, Settings
from controller.settingswatch import SettingsWatch, cluster_info
from controller.state.cluster import ClusterState
from controller.state.informer import start_informers
from controller.termination.controller import TerminationController

log = logging.getLogger(__name__)


class Reconciler(Protocol):
    name: str

    def reconcile(self) -> Any: ...


@dataclass
class Job:
    controller: Reconciler
    interval: float
    needs_cloud: bool = False  # skipped while the cloud does not answer (`cloudhealth.py`)
    first_run_now: bool = False  # else the first run is one interval after start


@dataclass
class App:
    settings: Settings
    clock: Clock
    kube: Kube
    cloud: CloudProvider
    state: ClusterState
    decisions: DecisionLog
    recorder: EventRecorder
    provisioning: ProvisioningController
    insight: Insight
    explainer: Explainer
    savings: SavingsLedger
    jobs: list[Job]
    elector: LeaderElector | None
    health: CloudHealth
    stop: threading.Event = field(default_factory=threading.Event)
    settings_watch: SettingsWatch | None = None

    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    def not_ready(self) -> str:
        """Why `/readyz` answers 503 ("" when ready): cluster state not synced yet, or — on the
        leader, the replica that would act — a cloud provider that does not answer."""
        if not self.state.synced():
            return "not synced"
        if self.is_leader() and not self.health.ready():
            return f"cloud provider: {self.health.problem()}"
        return ""

    def status(self) -> dict[str, Any]:
        return {
            "identity": self.settings.identity,
            "leader": self.is_leader(),
            "synced": self.state.synced(),
            "notReady": self.not_ready(),
            "cloud": self.health.to_json(),
            "controllers": [j.controller.name for j in self.jobs],
            "settingsProblem": self.settings_watch.problem if self.settings_watch is not None else "",
        }


class ConfigError(Exception):
    """A setting that cannot work (the message names it); `by_settings`: the karpenter-global-settings
    ConfigMap can fix it, so `run` re-reads that until it does (`configwait.py`)."""

    def __init__(self, message: str, by_settings: bool = False) -> None:
        super().__init__(message)
        self.by_settings = by_settings


def make_cloud_provider(settings: Settings, clock: Clock) -> CloudProvider:
    if settings.cloud_provider == "simulated":
        from controller.cloudprovider.aws.ratelimit import Buckets
        from controller.cloudprovider.simulated.provider import SimulatedCloudProvider

        return SimulatedCloudProvider(
            settings.simulated_db_path,
            clock,
            cluster=settings.cluster_name or SIMULATED_CLUSTER_NAME,
            catalog=read_simulated_catalog(settings.simulated_catalog) if settings.simulated_catalog else None,
            reshape=not settings.simulated_catalog,
            node_label=settings.simulated_node_label,
            ice_ttl=settings.ice_ttl_seconds,
            api_limits=Buckets() if settings.simulated_api_limits else None,
        )
    if settings.cloud_provider == "aws":
        return make_aws_provider(settings, clock)
    raise ConfigError(f"cloud-provider: {settings.cloud_provider!r} is not available (use simulated or aws)")


def read_simulated_catalog(path: str) -> tuple[InstanceType, ...]:
    """The simulated cloud's instance types from a `karpy catalog --output json` file, as written
    (no reshaping beyond what a provisioner's kubelet settings or node template ask for)."""
    import json

    from controller.cloudprovider.simulated.catalog import CatalogError, catalog_from_json

    try:
        with open(os.path.expanduser(path), encoding="utf-8") as f:
            types = catalog_from_json(json.load(f))
    except (OSError, ValueError, CatalogError) as err:
        raise ConfigError(f"simulated-catalog: {path}: {err}") from err
    if not types:
        raise ConfigError(f"simulated-catalog: {path}: no instance types")
    return types


def make_aws_provider(settings: Settings, clock: Clock) -> CloudProvider:
    from controller.cloudprovider.aws.api import AWSApi, Boto3Transport
    from controller.cloudprovider.aws.pricing import PriceFileError, Prices, read_price_file
    from controller.cloudprovider.aws.provider import AWSCloudProvider, AWSSettings

    if not settings.aws_region:
        raise ConfigError("aws-region: required with --cloud-provider aws")
    try:
        prices = Prices(settings.aws_region, read_price_file(settings.aws_price_file or None))
        tags = settings.tags()
    except (PriceFileError, ValueError) as err:
        raise ConfigError(str(err)) from err
    aws = AWSSettings.from_settings(settings, tags)
    api = AWSApi(Boto3Transport(settings.aws_region, settings.aws_endpoint_url or None))
    return AWSCloudProvider(api, aws, clock, prices, ice_ttl=settings.ice_ttl_seconds)


class AWSRefresh:
    """The `aws.refresh` job: the AWS provider's catalog, prices and launch templates, kept fresh
    in the background so that no listing happens on the provisioning path; and the cloud's
    health (`cloudhealth.py`): every pass while EC2 does not answer (bad credential, unreachable
    endpoint) is a `DryRun` check, reported with the IAM hint, until it answers."""

    name = "aws.refresh"

    def __init__(self, cloud: Any, health: CloudHealth, state: ClusterState, recorder: EventRecorder) -> None:
        self.cloud, self.health, self.state, self.recorder = cloud, health, state, recorder
        self._hydrated = False

    def reconcile(self) -> None:
        try:
            if not self._hydrated or not self.health.ready():
                problem = self.cloud.check_access()
                if problem:
                    self._failed(f"{problem} (see the IAM policy in the README)")
                    return
                self.cloud.launch_templates.hydrate()
                self._hydrated = True
            self.cloud.refresh()
        except CloudProviderError as err:
            self._failed(str(err))
            return
        self.health.ok()

    def _failed(self, problem: str) -> None:
        self.health.failed(problem)
        publish_unavailable(self.recorder, self.state.snapshot(), problem)


def build(
    settings: Settings,
    kube: Kube | None = None,
    cloud: CloudProvider | None = None,
    clock: Clock | None = None,
) -> App:
    clock = clock or SystemClock()
    kube = kube or KubeClient(settings.kubeconfig or None)
    raw_kube = kube
    cloud = MeteredCloud(cloud or make_cloud_provider(settings, clock))
    elector = None
    if settings.leader_elect:
        elector = LeaderElector(
            kube, clock, settings.identity, settings.leader_election_namespace, settings.leader_election_name,
            settings.lease_duration_seconds, settings.lease_retry_seconds,
        )  # fmt: skip
        # controllers write only while leading, even in the middle of a reconcile
        kube = LeaderOnlyKube(kube, elector.is_leader)
        cloud = LeaderOnlyCloud(cloud, elector.is_leader)
    state = ClusterState(clock)
    decisions = DecisionLog(clock)
    recorder = EventRecorder(kube, clock)
    prov_settings = ProvisioningSettings(
        batch_idle_seconds=settings.batch_idle_seconds,
        batch_max_seconds=settings.batch_max_seconds,
        bind_pods=settings.bind_pods,
    )
    provisioning = ProvisioningController(state, kube, cloud, clock, recorder, decisions, prov_settings)
    health = CloudHealth(clock, cloud.name, checked=cloud.name != "aws")
    jobs = [
        Job(provisioning, settings.tick_seconds, needs_cloud=True),
        Job(CounterController(state, kube, cloud.default_node_template), 1.0),
        Job(InitializationController(state, kube), 1.0),
        Job(PodStartupMetrics(state, started=clock.now()), POD_METRICS_SECONDS),
        Job(
            TerminationController(state, kube, cloud, clock, recorder, decisions), settings.termination_interval_seconds
        ),
        Job(
            GarbageCollectionController(
                state, kube, cloud, clock, decisions, settings.gc_leak_seconds, settings.gc_max_node_deletions
            ),
            settings.gc_interval_seconds,
            needs_cloud=True,
        ),
    ]
    aws_jobs, queue = _aws_jobs(settings, state, kube, cloud, recorder, decisions, health)
    jobs += aws_jobs
    # Deprovisioning is imported at module level: a module that fails to import crashes the
    # process at start instead of shipping a controller that never consolidates (issue 9, bug 5).
    deprovisioning = DeprovisioningController(
        state, kube, cloud, ProvisioningLauncher(provisioning.launcher, state), clock, _deprovisioning(settings),
        recorder=recorder, decisions=decisions,
    )  # fmt: skip
    jobs.append(Job(deprovisioning, settings.deprovisioning_interval_seconds, needs_cloud=True))
    insight = Insight(state, cloud, decisions, clock, deprovisioning.outlooks, health, lambda: deprovisioning.last_pass)
    explainer = Explainer(state, cloud, decisions)
    savings = SavingsLedger(kube, decisions, clock, settings.leader_election_namespace, settings.savings_configmap)
    jobs.append(Job(savings, 5.0))
    watch = _settings_watch(
        settings, raw_kube, recorder, clock, cloud, provisioning, queue, deprovisioning=deprovisioning
    )
    watch.reconcile()  # karpenter-global-settings before any other job acts
    problem = settings_problem(settings, watch)
    if problem:
        raise ConfigError(problem, by_settings=True)
    insight.settings_problem = lambda: watch.problem  # the dashboard's banner
    jobs.insert(0, Job(watch, SETTINGS_SECONDS))
    return App(
        settings, clock, kube, cloud, state, decisions, recorder, provisioning, insight, explainer, savings, jobs,
        elector, health, settings_watch=watch,
    )  # fmt: skip


SETTINGS_SECONDS = 2.0


def settings_problem(settings: Settings, watch: SettingsWatch) -> str:
    """Why the effective settings cannot start the controller ("" when they can): Karpenter v0.31 does
    not start without aws.clusterName; karpy neither, saying where to set it."""
    if settings.cloud_provider == "aws" and not watch.current.cluster_name.strip():
        unread = "" if watch.read else " (karpenter-global-settings could not be read)"
        invalid = watch.problem and not watch.problem.endswith(CLUSTER_NAME_REQUIRED)  # the ConfigMap's own
        return (watch.problem if invalid else CLUSTER_NAME_REQUIRED) + unread
    return ""


def settings_check(settings: Settings, kube: Kube, clock: Clock) -> Check:
    """`settings_problem` of karpenter-global-settings as it is now, for `ConfigWait`: read by a
    `SettingsWatch` that applies nothing, discovers no endpoint and writes no event."""
    watch = SettingsWatch(kube, EventRecorder(None, clock), clock, settings, lambda old, new: None,
                          getattr(kube, "version", None))  # fmt: skip

    def check() -> str:
        watch.reconcile()
        return settings_problem(settings, watch)

    return check


def _settings_watch(
    settings: Settings,
    kube: Kube,
    recorder: EventRecorder,
    clock: Clock,
    cloud: CloudProvider,
    provisioning: ProvisioningController,
    queue: Any,
    *,
    deprovisioning: DeprovisioningController,
) -> SettingsWatch:
    """karpenter-global-settings, and where each of its values goes when it changes."""

    def apply(old: Settings, new: Settings) -> None:
        provisioning.batcher.idle = new.batch_idle_seconds
        provisioning.batcher.max_duration = new.batch_max_seconds
        deprovisioning.set_drift_enabled(new.drift_enabled)
        if cloud.name == "aws":
            from controller.cloudprovider.aws.provider import AWSSettings

            cloud.reconfigure(AWSSettings.from_settings(new, new.tags()))  # type: ignore[attr-defined]
        if queue is not None:
            queue.rename(new.aws_interruption_queue)

    def discover_endpoint(current: Settings) -> tuple[str, str]:
        found = cluster_info(kube)
        if not found[0] and cloud.name == "aws" and current.cluster_name:  # no name: nothing to ask EKS
            found = cloud.describe_cluster(current.cluster_name)  # type: ignore[attr-defined]
        return found

    version = getattr(kube, "version", None)
    endpoint = discover_endpoint if settings.cloud_provider == "aws" else None
    return SettingsWatch(kube, recorder, clock, settings, apply, version, endpoint)


def _aws_jobs(
    settings: Settings,
    state: ClusterState,
    kube: Kube,
    cloud: CloudProvider,
    recorder: EventRecorder,
    decisions: DecisionLog,
    health: CloudHealth,
) -> tuple[list[Job], Any]:
    """The AWS jobs, and the interruption queue (its name follows the settings; "" = off)."""
    if cloud.name != "aws":
        return [], None
    from controller.cloudprovider.aws.interruption import InterruptionQueue
    from controller.interruption.controller import InterruptionController, Replacements

    # every 5 s: a pass reloads only what is stale (`refresh()`), and a cloud that does not
    # answer is retried that often, so the controller recovers soon after it does
    jobs = [Job(AWSRefresh(cloud, health, state, recorder), 5.0, first_run_now=True)]
    api = cloud.api  # type: ignore[attr-defined]
    queue = InterruptionQueue(api, settings.aws_interruption_queue)
    unavailable = cloud.unavailable  # type: ignore[attr-defined]
    interruption = InterruptionController(
        state,
        kube,
        queue,
        recorder,
        decisions,
        unavailable.mark,
        owns=cloud.has_seen,  # type: ignore[attr-defined]
    )
    jobs += [Job(interruption, 1.0, needs_cloud=True), Job(Replacements(interruption), 1.0, needs_cloud=True)]
    jobs.append(Job(NodeTemplateStatusController(state, kube, cloud), 10.0, needs_cloud=True))  # type: ignore[arg-type]
    return jobs, queue


def _deprovisioning(settings: Settings) -> DeprovisioningSettings:
    return DeprovisioningSettings(
        validation_wait_seconds=settings.validation_wait_seconds,
        poll_period_seconds=settings.poll_period_seconds,
        replacement_timeout_seconds=settings.replacement_timeout_seconds,
        consolidated_reset_seconds=settings.consolidated_reset_seconds,
        consolidation_budget_seconds=settings.consolidation_budget_seconds,
        consolidation_order=settings.consolidation_order,
        drift_enabled=settings.drift_enabled,
        drift_check_seconds=settings.drift_check_seconds,
    )


def job_body(app: App, controller: Reconciler, needs_cloud: bool = False) -> Callable[[], None]:
    """The APScheduler job: a thin adapter that calls `reconcile()` when this replica leads (and,
    for a job that needs the cloud, while the cloud answers)."""

    def body() -> None:
        if app.stop.is_set() or not app.is_leader():
            return
        if needs_cloud and not app.health.ready():
            return
        started = time.monotonic()
        caller = CALLER.set(controller.name)
        try:
            controller.reconcile()
            RECONCILE_TOTAL.labels(controller=controller.name, result="success").inc()
        except Exception:
            RECONCILE_TOTAL.labels(controller=controller.name, result="error").inc()
            RECONCILE_ERRORS.labels(controller=controller.name).inc()
            log.exception("reconciling", extra={"controller": controller.name})
        finally:
            CALLER.reset(caller)
            RECONCILE_TIME.labels(controller=controller.name).observe(time.monotonic() - started)

    return body


def store_savings_before_hand_over(app: App) -> None:
    """The leader's last savings pass before it lets the Lease go: what its deprovisioning carried
    out since the ledger's last pass (up to a job interval) is stored, not lost at a graceful leader
    change. A failure is logged; the Lease is released anyway."""
    if not app.is_leader():
        return
    try:
        app.savings.reconcile()
    except Exception:
        log.exception("storing savings before releasing the lease", extra={"controller": app.savings.name})


def configure(
    settings: Settings,
    kube: Kube,
    clock: Clock,
    pause: Callable[[float], bool],
    waiting: ConfigWait,
    on_wait: Callable[[ConfigWait], None],
) -> App | None:
    """`build()` until it works; while it raises `ConfigError`, `waiting` holds the problem (`on_wait`
    once, at the first: `run` serves the not-configured answers) and is re-checked — through the
    settings when they can fix it — until it is gone or `pause` says the process is stopping
    (None)."""
    while True:
        try:
            return build(settings, kube=kube, clock=clock)
        except ConfigError as err:
            first = not waiting.problem
            waiting.failed(str(err), settings_check(settings, kube, clock) if err.by_settings else None)
            if first:
                on_wait(waiting)
        if not waiting.wait(pause):
            return None


def run(settings: Settings) -> int:
    """The controller process. A configuration that cannot work never ends it (a deployed controller
    would crash-loop): it stays up not ready, saying why, until the configuration works or SIGTERM
    (exit 2 then; 0 after a normal run). Only a command line that does not parse, or a flag value
    that is invalid by itself, exits 2 at once (`karpy/controller_command.py`)."""
    logs.setup(settings.log_format, settings.log_level)
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    arenas = allocator.limit_arenas()  # before any thread starts (allocator.py: what it saves)
    log.info("starting karpy controller", extra={"settings": settings.to_log(), "mallocArenasLimited": arenas})
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        log.info("received signal %d, shutting down", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    clock = SystemClock()
    access = None
    if settings.api_auth == "kubernetes":  # reviews go through a client of their own: not leader-gated
        access = KubeAccess(KubeClient(settings.kubeconfig or None, timeout=5.0), time.monotonic).check
    waiting = ConfigWait(clock, SETTINGS_SECONDS)
    servers: list[ControllerHTTPServer] = []

    def serve_not_configured(waiting: ConfigWait) -> None:
        http = ControllerHTTPServer(
            settings.http_host, settings.http_port, DecisionLog(clock), waiting.status, access=access,
            unavailable=waiting.unavailable,
        )  # fmt: skip
        http.start()
        log.info("serving /healthz; /readyz and /api/v1 answer 503 until configured", extra={"port": http.port})
        servers.append(http)

    kube = KubeClient(settings.kubeconfig or None)
    built = configure(settings, kube, clock, stop.wait, waiting, serve_not_configured)
    if built is None:
        for http in servers:
            http.stop()
        log.info("stopped without being configured")
        return 2
    from apscheduler.executors.pool import ThreadPoolExecutor
    from apscheduler.schedulers.background import BackgroundScheduler

    app = built
    app.stop = stop
    start_informers(app.kube, app.state, app.stop, settings.resync_seconds)
    answers = {
        "/api/v1/nodes": app.insight.nodes,
        "/api/v1/pods/pending": app.insight.pending,
        "/api/v1/savings": lambda: {**app.savings.answer(), "opportunity": app.explainer.opportunity()},
    }
    routes: dict[str, Any] = {"prefixes": prefix_routes(app.explainer), "posts": post_routes(app.explainer)}
    if servers:  # the same port: the answers swap, the probes never see it closed
        http = servers[0]
        http.serve(app.decisions, app.status, answers, **routes)
    else:
        http = ControllerHTTPServer(
            settings.http_host, settings.http_port, app.decisions, app.status, answers, access=access, **routes
        )
    # registering calls only `describe()`: nothing reaches the cloud at start (issue 20, defect 5)
    capacity = CapacityCollector(app.state.snapshot, app.insight.prices)
    REGISTRY.register(capacity)
    if not servers:
        http.start()
    log.info("serving /metrics, /healthz, /api/v1/decisions, nodes and pods/pending", extra={"port": http.port})
    if app.elector is not None:
        threading.Thread(target=app.elector.run, args=(app.stop,), name="leader-election", daemon=True).start()
    scheduler = BackgroundScheduler(executors={"default": ThreadPoolExecutor(len(app.jobs) + 1)})
    for job in app.jobs:
        first = {"next_run_time": datetime.now(UTC)} if job.first_run_now else {}
        scheduler.add_job(
            job_body(app, job.controller, job.needs_cloud),
            "interval",
            seconds=job.interval,
            id=job.controller.name,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=None,
            **first,
        )
    scheduler.start()
    app.stop.wait()
    scheduler.shutdown(wait=True)  # running reconciles finish: never stop mid-action
    store_savings_before_hand_over(app)
    if app.elector is not None:
        app.elector.release()
    app.provisioning.close()
    http.stop()
    REGISTRY.unregister(capacity)
    log.info("stopped")
    return 0
