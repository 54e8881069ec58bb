"""Prometheus metrics with Karpenter's names (spec §9.1), declared once for the process.

Karpenter (Go client) exposes its counters without a `_total` suffix; prometheus_client would
add one to a `Counter`, so the Karpenter counters are gauges that only go up — the names stay
exactly what existing dashboards query. Controller-specific metrics live in each controller's
`metrics.py` and use the helpers here.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram, Summary

# controller-runtime's bucket list (seconds), used by Karpenter's duration histograms.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7,
                    0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15,
                    20, 25, 30, 40, 50, 60)  # fmt: skip

NODES_CREATED = Gauge(
    "karpenter_nodes_created", "Number of nodes created in total by Karpenter.", ["reason", "provisioner"]
)
NODES_TERMINATED = Gauge(
    "karpenter_nodes_terminated", "Number of nodes terminated in total by Karpenter.", ["reason", "provisioner"]
)
NODES_TERMINATION_TIME = Summary(
    "karpenter_nodes_termination_time_seconds",
    "The time taken between a node's deletion request and the removal of its finalizer",
    ["provisioner"],
)
CLOUDPROVIDER_DURATION = Histogram(
    "karpenter_cloudprovider_duration_seconds",
    "Duration of cloud provider method calls.",
    ["controller", "method", "provider"],
    buckets=DURATION_BUCKETS,
)
RECONCILE_TOTAL = Gauge(
    "controller_runtime_reconcile_total", "Total number of reconciliations per controller", ["controller", "result"]
)
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
    ["controller"],
    buckets=DURATION_BUCKETS,
)
RECONCILE_ERRORS = Gauge(
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
