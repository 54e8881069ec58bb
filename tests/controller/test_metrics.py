"""Karpenter's summaries with quantiles (`QuantileSummary`), over a sliding window."""

from __future__ import annotations

import math

from prometheus_client import REGISTRY, generate_latest

from controller.metrics import SUMMARY_MAX_AGE, QuantileSummary


def test_quantiles_sum_count_and_the_window() -> None:
    now = [1000.0]
    summary = QuantileSummary("karpy_test_quantiles_seconds", "test", ["provisioner"], now=lambda: now[0])
    try:
        for value in (1.0, 2.0, 3.0, 4.0):
            summary.labels(provisioner="a").observe(value)

        def sample(q: str) -> float | None:
            return REGISTRY.get_sample_value("karpy_test_quantiles_seconds", {"provisioner": "a", "quantile": q})

        assert [sample(q) for q in ("0", "0.5", "0.9", "0.99", "1")] == [1.0, 2.0, 4.0, 4.0, 4.0]
        assert REGISTRY.get_sample_value("karpy_test_quantiles_seconds_sum", {"provisioner": "a"}) == 10.0
        assert "# TYPE karpy_test_quantiles_seconds summary" in generate_latest().decode()
        now[0] += SUMMARY_MAX_AGE + 1  # observations age out of the quantiles, not of sum and count
        assert math.isnan(sample("0.5") or 0.0)
        assert REGISTRY.get_sample_value("karpy_test_quantiles_seconds_count", {"provisioner": "a"}) == 4.0
    finally:
        REGISTRY.unregister(summary)
