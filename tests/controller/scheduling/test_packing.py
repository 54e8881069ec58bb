"""LP bound and price-guided re-packing (`controller/scheduling/packing.py`)."""

from __future__ import annotations

import numpy as np
import pytest

from controller.scheduling.packing import dual_prices, lp_cover, pack

# two types: one cpu-heavy (4 cpu, 4 mem, $4) and one memory-heavy (1 cpu, 8 mem, $2)
USABLE = np.array([[4, 4, 100], [1, 8, 100]], dtype=np.int64)
PRICE = np.array([4.0, 2.0])


def test_lp_cover_mixes_two_types() -> None:
    cost, solution = lp_cover(USABLE, PRICE, np.array([8, 16, 0]))
    # 4a + b = 8 and 4a + 8b = 16 → a = 12/7, b = 8/7
    assert cost == pytest.approx(4 * 12 / 7 + 2 * 8 / 7)
    assert sorted((t, round(x, 6)) for t, x in solution) == [(0, round(12 / 7, 6)), (1, round(8 / 7, 6))]
    duals = dual_prices(USABLE, PRICE, np.array([8, 16, 0]), solution)
    assert duals @ np.array([4, 4]) == pytest.approx(4.0) and duals @ np.array([1, 8]) == pytest.approx(2.0)


def test_lp_cover_single_type() -> None:
    cost, solution = lp_cover(USABLE, PRICE, np.array([8, 0, 0]))
    assert cost == pytest.approx(8.0) and solution == [(0, 2.0)]


def test_pack_places_every_pod_in_a_bin_that_holds_it() -> None:
    shapes = np.array([[2, 1, 1], [1, 4, 1]], dtype=np.int64)
    counts = np.array([4, 4])
    bins = pack(shapes, counts, USABLE, PRICE)
    assert bins is not None
    assert np.sum([take for _, take in bins], axis=0).tolist() == [4, 4]
    for t, take in bins:
        assert ((shapes * take[:, None]).sum(axis=0) <= USABLE[t]).all()
    assert pack(np.array([[9, 9, 1]]), np.array([1]), USABLE, PRICE) is None
