"""The documented price model (`controller/cloudprovider/simulated/pricing.py`)."""

from __future__ import annotations

import pytest

from controller.cloudprovider.simulated.pricing import on_demand_price, spot_discount, spot_price


@pytest.mark.parametrize(
    ("category", "generation", "processor", "variants", "vcpus", "gib", "price"),
    [("m", 5, "intel", "", 2, 8, 0.096), ("c", 5, "intel", "", 2, 4, 0.085), ("r", 5, "intel", "", 2, 16, 0.1263),
     ("m", 5, "intel", "", 4, 16, 0.192), ("c", 6, "graviton", "", 2, 4, 0.068), ("m", 6, "amd", "", 2, 8, 0.0864)],
)  # fmt: skip
def test_on_demand_examples(
    category: str, generation: int, processor: str, variants: str, vcpus: int, gib: int, price: float
) -> None:
    kwargs = {"category": category, "generation": generation, "processor": processor, "variants": variants}
    assert on_demand_price(**kwargs, vcpus=vcpus, memory_gib=gib) == price  # type: ignore[arg-type]


def test_gpus_add_their_hourly_price() -> None:
    base = on_demand_price(category="p", generation=3, processor="intel", variants="", vcpus=8, memory_gib=61)
    with_gpu = on_demand_price(
        category="p", generation=3, processor="intel", variants="", vcpus=8, memory_gib=61, gpu_name="v100", gpu_count=1
    )
    assert with_gpu == pytest.approx(base + 2.75, abs=1e-4)


def test_spot_discount_is_deterministic_and_bounded() -> None:
    discounts = [spot_discount("m5", zone) for zone in ("us-west-2a", "us-west-2b", "us-west-2c")]
    assert all(0.28 <= d < 0.58 for d in discounts)
    assert discounts == [spot_discount("m5", zone) for zone in ("us-west-2a", "us-west-2b", "us-west-2c")]
    assert spot_price(1.0, "m5", "us-west-2a") == round(discounts[0], 4)
