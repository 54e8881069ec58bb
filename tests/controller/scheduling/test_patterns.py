"""The pattern model of the MILP pass (`controller/scheduling/patterns.py`)."""

from __future__ import annotations

import numpy as np

from controller.scheduling import exact, patterns

# one resource column per pod count: cpu (millicores), memory (units), pods
TWO_CPU = np.array([[2000, 1, 1]])
TYPES = np.array([[2000, 100, 10], [4000, 100, 10], [6000, 100, 10]])  # 2, 4 and 6 cpu
PRICES = np.array([1.0, 1.5, 2.6])


def expect_valid(bins: list[patterns.Bin], shapes: np.ndarray, counts: np.ndarray, usable: np.ndarray) -> None:
    """Every bin fits its type, and together they hold exactly the pods."""
    total = np.zeros(len(shapes), dtype=np.int64)
    for t, take in bins:
        assert (take @ shapes <= usable[t]).all(), (t, take)
        total += take
    assert total.tolist() == counts.tolist()


def test_per_node_counts_what_one_node_holds_of_each_shape() -> None:
    shapes = np.array([[500, 1, 1], [3000, 1, 1]])
    fit = patterns.per_node(shapes, np.array([100, 100]), TYPES)
    assert fit.tolist() == [[4, 0], [8, 1], [10, 2]]  # the pods column caps the 6-cpu type at 10
    assert patterns.per_node(shapes, np.array([3, 100]), TYPES)[:, 0].tolist() == [3, 3, 3]


def test_three_pods_go_on_a_four_and_a_two_cpu_node() -> None:
    counts = np.array([3])
    start = [(0, np.array([1]))] * 3  # three 2-cpu nodes, $3
    found = patterns.solve_patterns(TWO_CPU, counts, TYPES, PRICES, None, start)
    assert found.cost == 2.5
    assert sorted(t for t, _ in found.bins) == [0, 1]
    expect_valid(found.bins, TWO_CPU, counts, TYPES)
    assert 0 < found.bound <= found.cost  # the LP (1.5 per 4 cpu): 2.25


def test_a_node_cap_is_respected() -> None:
    counts = np.array([3])
    start = [(2, np.array([3]))]
    found = patterns.solve_patterns(TWO_CPU, counts, TYPES, PRICES, None, start, max_nodes=1)
    assert found.cost == 2.6 and [t for t, _ in found.bins] == [2]  # one node: only the 6-cpu type holds all
    capped = patterns.solve_patterns(TWO_CPU, counts, TYPES, PRICES, None, start, max_nodes=2)
    assert capped.cost == 2.5 and len(capped.bins) == 2


def test_odd_leftovers_go_on_a_node_no_pattern_describes() -> None:
    # 7 small pods (1 cpu) and 1 big (3 cpu). Types: 4 cpu $1, 8 cpu $1.9, 2 cpu $0.55.
    # Best: 8 cpu [5 small + 1 big] + 2 cpu [2 small] = $2.45; every full pattern wastes more.
    shapes = np.array([[1000, 1, 1], [3000, 1, 1]])
    counts = np.array([7, 1])
    usable = np.array([[4000, 100, 20], [8000, 100, 20], [2000, 100, 20]])
    price = np.array([1.0, 1.9, 0.55])
    start = [(0, np.array([4, 0])), (0, np.array([3, 0])), (0, np.array([0, 1]))]  # $3
    found = patterns.solve_patterns(shapes, counts, usable, price, None, start)
    expect_valid(found.bins, shapes, counts, usable)
    brute = exact.solve_bins(shapes, counts, usable, price, 4, None)
    assert brute.status == "optimal"
    assert abs(found.cost - brute.cost) < 1e-9


def test_random_instances_match_the_per_bin_optimum() -> None:
    rng = np.random.default_rng(7)
    for _ in range(8):
        shapes = np.column_stack([rng.choice([250, 500, 1000, 2000], 3), rng.choice([1, 2, 4, 8], 3), np.ones(3)])
        shapes = np.unique(shapes.astype(np.int64), axis=0)
        counts = rng.integers(1, 8, len(shapes))
        sizes = np.array([1, 2, 4, 8])
        usable = np.column_stack([sizes * 1900, sizes * 7, np.full(4, 30)]).astype(np.int64)
        price = sizes * 0.05 * rng.uniform(0.9, 1.1, 4)
        fit = patterns.per_node(shapes, counts, usable)
        if not (fit.max(axis=0) > 0).all():
            continue
        biggest = int(np.argmax(price))
        start = [
            (biggest, np.eye(len(shapes), dtype=np.int64)[s]) for s in range(len(shapes)) for _ in range(counts[s])
        ]
        found = patterns.solve_patterns(shapes, counts, usable, price, None, start)
        brute = exact.solve_bins(shapes, counts, usable, price, int(counts.sum()), None)
        expect_valid(found.bins, shapes, counts, usable)
        assert brute.status == "optimal"
        assert found.cost <= brute.cost * 1.02 + 1e-9  # near-exact: one free node per type, generated patterns
        assert found.bound <= brute.cost + 1e-9
