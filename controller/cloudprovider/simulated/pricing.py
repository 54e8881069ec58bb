"""The simulated cloud's price model: deterministic, documented, AWS-shaped (us-west-2, 2023).

Pure. On-demand $/hour =
    (vCPUs × 0.0370 + GiB × 0.00275) × category × generation × processor × variant
    + GPUs × the GPU's hourly price,
rounded to 4 decimals, where
- category: c 1.00, m 1.00, r 1.07, t 0.87, GPU and Neuron families (g, p, inf, trn) 1.00;
- generation: 1, 2 → 1.00, 3 → 1.30, 4 → 1.15, 5 → 1.00, 6 → 1.00, 7 → 1.05;
- processor: Intel 1.00, AMD (`a` after the generation) 0.90, Graviton arm64 (`g`) 0.80;
- variant: local NVMe (`d`) × 1.13, enhanced networking (`n`) × 1.25;
so m5.large = $0.0960, c5.large = $0.0850, r5.large = $0.1263, m5.xlarge = $0.1920.
Spot $/hour = on-demand × d(family, zone), d = 0.28 + 0.30 × (crc32("family:zone") mod 1000) / 1000,
so spot is 42–72 % cheaper, varies by zone and family, and is linear in size within a family.
"""

from __future__ import annotations

import zlib

BASE_VCPU_HOUR = 0.0370
BASE_GIB_HOUR = 0.00275
CATEGORY_FACTOR = {"c": 1.00, "m": 1.00, "r": 1.07, "t": 0.87, "g": 1.00, "p": 1.00, "inf": 1.00, "trn": 1.00}
GENERATION_FACTOR = {1: 1.00, 2: 1.00, 3: 1.30, 4: 1.15, 5: 1.00, 6: 1.00, 7: 1.05}
PROCESSOR_FACTOR = {"intel": 1.00, "amd": 0.90, "graviton": 0.80}
VARIANT_FACTOR = {"d": 1.13, "n": 1.25}
GPU_HOUR = {
    "t4": 0.38,
    "t4g": 0.30,
    "a10g": 0.76,
    "l4": 0.55,
    "v100": 2.75,
    "a100": 3.65,
    "radeon-pro-v520": 0.28,
    "inferentia": 0.10,
    "inferentia2": 0.55,
    "trainium": 1.25,
}


def on_demand_price(
    *,
    category: str,
    generation: int,
    processor: str,
    variants: str,
    vcpus: int,
    memory_gib: float,
    gpu_name: str = "",
    gpu_count: int = 0,
) -> float:
    factor = CATEGORY_FACTOR[category] * GENERATION_FACTOR[generation] * PROCESSOR_FACTOR[processor]
    for variant in variants:
        factor *= VARIANT_FACTOR.get(variant, 1.0)
    price = (vcpus * BASE_VCPU_HOUR + memory_gib * BASE_GIB_HOUR) * factor
    if gpu_count:
        price += gpu_count * GPU_HOUR[gpu_name]
    return round(price, 4)


def spot_discount(family: str, zone: str) -> float:
    """The spot price as a fraction of on-demand for one family in one zone (0.28–0.58)."""
    return 0.28 + 0.30 * (zlib.crc32(f"{family}:{zone}".encode()) % 1000) / 1000


def spot_price(on_demand: float, family: str, zone: str) -> float:
    return round(on_demand * spot_discount(family, zone), 4)
