"""The AWS provider's gauges with Karpenter v0.31's names and labels (spec §9.1; Karpenter's
`pkg/providers/instancetype/metrics.go` and `pkg/providers/pricing/metrics.go`).

- `karpenter_cloudprovider_instance_type_cpu_cores{instance_type}` and
  `karpenter_cloudprovider_instance_type_memory_bytes{instance_type}`: each discovered type's
  default vCPUs and memory (MiB × 2^20), set when the catalog is loaded;
- `karpenter_cloudprovider_instance_type_price_estimate{instance_type, capacity_type, region,
  zone}`: the hourly prices decisions use — on-demand with `zone=""`, spot per zone — set when
  prices are refreshed (at start, then every 12 h).
A type or price that disappears keeps its last value, as Karpenter's gauges do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import Gauge

INSTANCE_TYPE_CPU = Gauge(
    "karpenter_cloudprovider_instance_type_cpu_cores", "VCPUs cores for a given instance type.", ["instance_type"]
)
INSTANCE_TYPE_MEMORY = Gauge(
    "karpenter_cloudprovider_instance_type_memory_bytes", "Memory, in bytes, for a given instance type.",
    ["instance_type"],
)  # fmt: skip
PRICE_ESTIMATE = Gauge(
    "karpenter_cloudprovider_instance_type_price_estimate",
    "Estimated hourly price used when making informed decisions on node cost calculation. This is updated once on "
    "startup and then every 12 hours.",
    ["instance_type", "capacity_type", "region", "zone"],
)


def record_instance_types(infos: Iterable[Mapping[str, Any]]) -> None:
    """DescribeInstanceTypes entries → the cpu and memory gauges."""
    for info in infos:
        name = str(info["InstanceType"])
        INSTANCE_TYPE_CPU.labels(instance_type=name).set(int((info.get("VCpuInfo") or {}).get("DefaultVCpus") or 0))
        mib = int((info.get("MemoryInfo") or {}).get("SizeInMiB") or 0)
        INSTANCE_TYPE_MEMORY.labels(instance_type=name).set(mib * 1024 * 1024)


def record_prices(region: str, estimates: Iterable[tuple[str, str, str, float]]) -> None:
    """(instance type, capacity type, zone — "" for on-demand, price) → the price gauge."""
    for instance_type, capacity_type, zone, price in estimates:
        PRICE_ESTIMATE.labels(instance_type=instance_type, capacity_type=capacity_type, region=region, zone=zone).set(
            price
        )
