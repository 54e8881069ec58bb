"""Prometheus metrics of deprovisioning, with Karpenter's names (spec §9.1).

`DeprovisioningMetrics(registry)` declares (or, when another controller already registered
the same name in that registry, reuses) the collectors: actions performed, eligible machines,
evaluation duration, replacement initialization time, nodes created and terminated.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
                    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
                    40, 50, 60)  # fmt: skip


def _existing(registry: CollectorRegistry, name: str) -> Any:
    return registry._names_to_collectors.get(name)


def _counter(registry: CollectorRegistry, name: str, doc: str, labels: tuple[str, ...]) -> Any:
    return _existing(registry, name + "_total") or Counter(name, doc, labels, registry=registry)


class DeprovisioningMetrics:
    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.actions_performed = _counter(
            registry, "karpenter_deprovisioning_actions_performed",
            "Number of deprovisioning actions performed.", ("action", "deprovisioner"),
        )
        self.nodes_terminated = _counter(
            registry, "karpenter_nodes_terminated", "Number of nodes terminated in total by Karpenter.",
            ("reason", "provisioner"),
        )
        self.nodes_created = _counter(
            registry, "karpenter_nodes_created", "Number of nodes created in total by Karpenter.",
            ("reason", "provisioner"),
        )
        self.eligible_machines = _existing(registry, "karpenter_deprovisioning_eligible_machines") or Gauge(
            "karpenter_deprovisioning_eligible_machines", "Number of machines eligible for deprovisioning.",
            ("deprovisioner",), registry=registry,
        )
        self.evaluation_duration = _existing(registry, "karpenter_deprovisioning_evaluation_duration_seconds") or (
            Histogram(
                "karpenter_deprovisioning_evaluation_duration_seconds", "Duration of the deprovisioning evaluation.",
                ("method",), buckets=DURATION_BUCKETS, registry=registry,
            )
        )
        self.replacement_initialized = _existing(
            registry, "karpenter_deprovisioning_replacement_node_initialized_seconds"
        ) or Histogram(
            "karpenter_deprovisioning_replacement_node_initialized_seconds",
            "Time between a replacement node's launch and its initialization.",
            buckets=DURATION_BUCKETS, registry=registry,
        )
