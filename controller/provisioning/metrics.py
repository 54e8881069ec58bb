"""Provisioning metrics (spec §9.1)."""

from __future__ import annotations

from prometheus_client import Gauge, Histogram

from controller.metrics import DURATION_BUCKETS

SCHEDULING_DURATION = Histogram(
    "karpenter_provisioner_scheduling_duration_seconds",
    "Duration of scheduling process in seconds.",
    buckets=DURATION_BUCKETS,
)
# Karpenter observes every scheduler run (its `Solve`): provisioning's and deprovisioning's simulations.
SIMULATION_DURATION = Histogram(
    "karpenter_provisioner_scheduling_simulation_duration_seconds",
    "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.",
    buckets=DURATION_BUCKETS,
)
PROVISIONER_LIMIT = Gauge(
    "karpenter_provisioner_limit", "The Provisioner Limits are the limits specified on the provisioner",
    ["resource_type", "provisioner"],
)  # fmt: skip
PROVISIONER_USAGE = Gauge(
    "karpenter_provisioner_usage", "The Provisioner Usage is the amount of resources that have been provisioned",
    ["resource_type", "provisioner"],
)  # fmt: skip
PROVISIONER_USAGE_PCT = Gauge(
    "karpenter_provisioner_usage_pct", "The Provisioner Usage Percentage is the usage / limit",
    ["resource_type", "provisioner"],
)  # fmt: skip
PASS_DURATION = Histogram(
    "karpy_provisioning_pass_duration_seconds",
    "Duration of a whole provisioning pass (schedule, launch, bind) in seconds.",
    buckets=DURATION_BUCKETS,
)
PODS_CONSIDERED = Gauge(
    "karpy_provisioning_pods_considered",
    "Pods the last provisioning pass considered: every pending pod (and those of nodes being deleted).",
)
