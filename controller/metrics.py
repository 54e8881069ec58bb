"""Prometheus metrics with Karpenter's names (spec §9.1), declared once for the process.

Karpenter (Go client) exposes its counters typed `counter` under their declared name, without
a `_total` suffix (`karpenter_nodes_created`), which is what its dashboards query;
prometheus_client names a `Counter`'s series `<name>_total`. `KarpenterCounter` is a counter
(only goes up, typed `counter`) whose series keep the bare name, and `controller/exposition.py`
writes `/metrics` from the series' own names. Counters whose Karpenter name ends in `_total`
(controller-runtime's, client-go's) are plain `Counter`s. Controller-specific metrics live in each
controller's `metrics.py` and use the helpers here.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

# controller-runtime's bucket list (seconds), used by Karpenter's duration histograms.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7,
                    0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15,
                    20, 25, 30, 40, 50, 60)  # fmt: skip


def resource_column(resource: str) -> str:
    """A resource name as Karpenter's `resource_type` label writes it: lower case, `-` → `_`
    (`ephemeral_storage`)."""
    return resource.lower().replace("-", "_")


class KarpenterCounter(Counter):
    """A counter whose series carry its own name, as Karpenter's Go counters do (no `_total`, no
    `_created`); `inc()` only, like any `Counter`."""

    def collect(self) -> Iterator[Metric]:
        for family in super().collect():
            bare = Metric(family.name, family.documentation, "counter")
            for sample in family.samples:
                if sample.name == family.name + "_total":
                    bare.add_sample(family.name, sample.labels, sample.value)
            yield bare


NODES_CREATED = KarpenterCounter(
    "karpenter_nodes_created", "Number of nodes created in total by Karpenter.", ["reason", "provisioner"]
)
NODES_TERMINATED = KarpenterCounter(
    "karpenter_nodes_terminated", "Number of nodes terminated in total by Karpenter.", ["reason", "provisioner"]
)
# Karpenter's summaries' objectives (Go client: quantile → allowed error), over the last 10 minutes.
OBJECTIVES = (0.0, 0.5, 0.9, 0.99, 1.0)
SUMMARY_MAX_AGE = 600.0
SUMMARY_MAX_SAMPLES = 10_000


class _Window:
    def __init__(self, owner: QuantileSummary) -> None:
        self._owner = owner
        self.samples: deque[tuple[float, float]] = deque(maxlen=SUMMARY_MAX_SAMPLES)  # (time, value)
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        with self._owner.lock:
            self.samples.append((self._owner.now(), value))
            self.count += 1
            self.sum += value


class QuantileSummary(Collector):
    """A summary with quantiles, as Karpenter's Go summaries export them (`name{quantile="0.5"}`,
    `_sum`, `_count`): prometheus_client's `Summary` has no quantiles, and Karpenter's dashboards
    query `{quantile="0.5"}` and friends. Quantiles are exact over the observations of the last
    `SUMMARY_MAX_AGE` seconds (at most `SUMMARY_MAX_SAMPLES` of them); an empty window gives NaN,
    as the Go client does. `labels(...)` then `observe(value)`, like prometheus_client's."""

    def __init__(
        self, name: str, documentation: str, labelnames: Sequence[str] = (), now: Callable[[], float] = time.monotonic
    ) -> None:
        self.name, self.documentation, self.labelnames = name, documentation, tuple(labelnames)
        self.now = now
        self.lock = threading.Lock()
        self._children: dict[tuple[str, ...], _Window] = {}
        REGISTRY.register(self)

    def labels(self, *values: str, **named: str) -> _Window:
        key = tuple(str(v) for v in values) or tuple(str(named[n]) for n in self.labelnames)
        with self.lock:
            child = self._children.get(key)
            if child is None:
                child = self._children[key] = _Window(self)
            return child

    def observe(self, value: float) -> None:
        self.labels().observe(value)

    def describe(self) -> Iterator[Metric]:
        yield Metric(self.name, self.documentation, "summary")

    def collect(self) -> Iterator[Metric]:
        metric = Metric(self.name, self.documentation, "summary")
        cutoff = self.now() - SUMMARY_MAX_AGE
        with self.lock:
            for key, child in self._children.items():
                while child.samples and child.samples[0][0] < cutoff:
                    child.samples.popleft()
                values = sorted(v for _, v in child.samples)
                labels = dict(zip(self.labelnames, key, strict=True))
                for q in OBJECTIVES:
                    value = values[max(0, math.ceil(q * len(values)) - 1)] if values else float("nan")  # nearest rank
                    metric.add_sample(self.name, {**labels, "quantile": _format(q)}, value)
                metric.add_sample(self.name + "_sum", labels, child.sum)
                metric.add_sample(self.name + "_count", labels, float(child.count))
        yield metric


def _format(q: float) -> str:
    return "0" if q == 0 else "1" if q == 1 else str(q)


# Karpenter v0.31's machine lifecycle counters; karpy has no Machine objects, a node stands for
# its machine (as for `karpenter_machines_disrupted` / `_drifted` in deprovisioning's metrics):
# created and launched when the launcher has the instance and its Node, initialized when the
# node is labelled initialized, terminated wherever a node is (reason as `karpenter_nodes_terminated`).
MACHINES_CREATED = KarpenterCounter(
    "karpenter_machines_created",
    "Number of machines created in total by Karpenter. Labeled by reason the machine was created and the owning "
    "provisioner.",
    ["reason", "provisioner"],
)
MACHINES_LAUNCHED = KarpenterCounter(
    "karpenter_machines_launched",
    "Number of machines launched in total by Karpenter. Labeled by the owning provisioner.",
    ["provisioner"],
)
MACHINES_INITIALIZED = KarpenterCounter(
    "karpenter_machines_initialized",
    "Number of machines initialized in total by Karpenter. Labeled by the owning provisioner.",
    ["provisioner"],
)
MACHINES_TERMINATED = KarpenterCounter(
    "karpenter_machines_terminated",
    "Number of machines terminated in total by Karpenter. Labeled by reason the machine was terminated and the owning "
    "provisioner.",
    ["reason", "provisioner"],
)
NODES_TERMINATION_TIME = QuantileSummary(
    "karpenter_nodes_termination_time_seconds",
    "The time taken between a node's deletion request and the removal of its finalizer",
    ["provisioner"],
)
PODS_STARTUP_TIME = QuantileSummary(
    "karpenter_pods_startup_time_seconds", "The time from pod creation until the pod is running."
)
# The controller (job name) a call is made for: set by `main.job_body` around each reconcile,
# read by `cloudprovider/metered.py` for `karpenter_cloudprovider_duration_seconds{controller}`.
CALLER: ContextVar[str] = ContextVar("karpy_caller", default="")
CLOUDPROVIDER_DURATION = Histogram(
    "karpenter_cloudprovider_duration_seconds",
    "Duration of cloud provider method calls.",
    ["controller", "method", "provider"],
    buckets=DURATION_BUCKETS,
)
RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile_total", "Total number of reconciliations per controller", ["controller", "result"]
)
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
    ["controller"],
    buckets=DURATION_BUCKETS,
)
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors_total", "Total number of reconciliation errors per controller", ["controller"]
)
# client-go's request counter (exposed by Karpenter as `rest_client_requests_total`): every
# request the controller's Kubernetes client sends, watches included, by status code and method.
REST_CLIENT_REQUESTS = Counter(
    "rest_client_requests", "Number of HTTP requests, partitioned by status code, method, and host.", ["code", "method"]
)
# karpy's: 1 while the cloud provider answers (its last check succeeded), 0 while it does not
# (bad credential, unreachable endpoint); see `controller/cloudhealth.py`.
CLOUDPROVIDER_READY = Gauge(
    "karpy_cloudprovider_ready", "1 while the cloud provider answers karpy's calls, else 0.", ["provider"]
)
# karpy's API economy (issue 19, 7): every call the cloud provider sends, by the cloud's operation
# name (create_fleet, describe_instances, …; the simulated cloud counts the EC2 calls the AWS
# provider would make), the calls the cloud refused for its request rate, and the seconds that
# rate cost: the AWS provider's client-side pacing and backoff, the simulated cloud's refusals'
# retry-after.
# Karpenter's AWS batcher (pkg/batcher/metrics.go): each batch's size and how long its window
# stayed open, by batcher (`create_fleet`, `describe_instances`, `terminate_instances`).
BATCH_SIZE_BUCKETS = (1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 125, 150, 175, 200, 225, 250,
                      275, 300, 350, 400, 450, 500, 550, 600, 700, 800, 900, 1000)  # fmt: skip
BATCHER_BATCH_SIZE = Histogram(
    "karpenter_cloudprovider_batcher_batch_size",
    "Size of the request batch per batcher",
    ["batcher"],
    buckets=BATCH_SIZE_BUCKETS,
)
BATCHER_BATCH_TIME = Histogram(
    "karpenter_cloudprovider_batcher_batch_time_seconds",
    "Duration of the batching window per batcher",
    ["batcher"],
    buckets=DURATION_BUCKETS,
)
CLOUD_API_CALLS = Counter(
    "karpy_cloudprovider_api_calls", "Calls sent to the cloud provider's API, by operation.", ["provider", "operation"]
)
CLOUD_API_THROTTLED = Counter(
    "karpy_cloudprovider_api_throttled",
    "Calls the cloud refused for its request rate (RequestLimitExceeded), by operation.",
    ["provider", "operation"],
)
CLOUD_API_THROTTLE_SECONDS = Counter(
    "karpy_cloudprovider_api_throttle_seconds",
    "Seconds the cloud's request rate cost: client-side pacing and throttling backoff, or a refusal's retry-after.",
    ["provider", "operation"],
)
