"""Prometheus metrics of deprovisioning, with Karpenter's names (spec §9.1).

Declared once for the process, following `controller.metrics`: Karpenter's counters are
`KarpenterCounter`s, typed `counter` and exposed without a `_total` suffix, as existing
dashboards query them. A node found drifted counts in `karpenter_machines_disrupted{type="drift"}` and
`karpenter_machines_drifted{type=<drift reason>}` (v0.31's machine counters; karpy has no
Machines, a node stands for its machine). `karpenter_nodes_terminated` and
`karpenter_nodes_created` are the shared ones of `controller.metrics` (the provisioning launcher
counts replacements it creates).
"""

from __future__ import annotations

from prometheus_client import Gauge, Histogram

from controller.deprovisioning.types import MULTI_NODE_CONSOLIDATION, SINGLE_NODE_CONSOLIDATION
from controller.metrics import DURATION_BUCKETS, MACHINES_TERMINATED, NODES_CREATED, NODES_TERMINATED, KarpenterCounter

ACTIONS_PERFORMED = KarpenterCounter(
    "karpenter_deprovisioning_actions_performed",
    "Number of deprovisioning actions performed. Labeled by deprovisioner.",
    ["action", "deprovisioner"],
)
ELIGIBLE_MACHINES = Gauge(
    "karpenter_deprovisioning_eligible_machines",
    "Number of machines eligible for deprovisioning by Karpenter. Labeled by the deprovisioner.",
    ["deprovisioner"],
)
EVALUATION_DURATION = Histogram(
    "karpenter_deprovisioning_evaluation_duration_seconds",
    "Duration of the deprovisioning evaluation process in seconds.",
    ["method"],
    buckets=DURATION_BUCKETS,
)
PASS_SECONDS = Gauge(
    "karpy_deprovisioning_pass_seconds", "Wall time of the last deprovisioning pass (its simulations are budgeted)."
)
PASS_CPU_SECONDS = Gauge(
    "karpy_deprovisioning_pass_cpu_seconds",
    "CPU time the last deprovisioning pass's thread spent (its wall time also counts other processes' share).",
)
CANDIDATES_COVERED = Gauge(
    "karpy_deprovisioning_candidates_covered",
    "Candidates the last deprovisioning pass evaluated, by consolidation method (with eligible: the coverage).",
    ["method"],
)
PASS_COMPLETE = Gauge(
    "karpy_deprovisioning_pass_complete",
    "1 when the last pass went through every method it reached, 0 when it stopped on its budget (resumed next).",
)
MACHINES_DISRUPTED = KarpenterCounter(
    "karpenter_machines_disrupted",
    "Number of machines disrupted in total by Karpenter. Labeled by disruption type of the machine and the owning "
    "provisioner.",
    ["type", "provisioner"],
)
MACHINES_DRIFTED = KarpenterCounter(
    "karpenter_machines_drifted",
    "Number of machine drifted reasons in total by Karpenter. Labeled by drift type of the machine and the owning "
    "provisioner..",
    ["type", "provisioner"],
)
REPLACEMENT_INITIALIZED = Histogram(
    "karpenter_deprovisioning_replacement_machine_initialized_seconds",
    "Amount of time required for a replacement node to become initialized.",
    buckets=DURATION_BUCKETS,
)
REPLACEMENT_LAUNCH_FAILED = KarpenterCounter(
    "karpenter_deprovisioning_replacement_machine_launch_failure_counter",
    "The number of times that Karpenter failed to launch a replacement node for deprovisioning. Labeled by "
    "deprovisioner.",
    ["deprovisioner"],
)
# Karpenter's consolidation timeouts are karpy's passes that stop on their budget (resumed next).
CONSOLIDATION_TIMEOUTS = KarpenterCounter(
    "karpenter_deprovisioning_consolidation_timeouts",
    "Number of times the Consolidation algorithm has reached a timeout. Labeled by consolidation type.",
    ["consolidation_type"],
)
CONSOLIDATION_TYPES = {MULTI_NODE_CONSOLIDATION: "multi-machine", SINGLE_NODE_CONSOLIDATION: "single-machine"}

__all__ = [
    "ACTIONS_PERFORMED",
    "CANDIDATES_COVERED",
    "CONSOLIDATION_TIMEOUTS",
    "CONSOLIDATION_TYPES",
    "ELIGIBLE_MACHINES",
    "EVALUATION_DURATION",
    "MACHINES_DISRUPTED",
    "MACHINES_DRIFTED",
    "MACHINES_TERMINATED",
    "NODES_CREATED",
    "NODES_TERMINATED",
    "PASS_COMPLETE",
    "PASS_CPU_SECONDS",
    "PASS_SECONDS",
    "REPLACEMENT_INITIALIZED",
    "REPLACEMENT_LAUNCH_FAILED",
]
