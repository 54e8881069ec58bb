"""Price-guided re-packing of interchangeable pods, and the LP lower bound it aims at.

Pure, numpy. Karpenter's greedy fills one new node at a time in cpu-then-memory order, so each
node holds a slice of the queue with one cpu:memory ratio and ends up on a type that wastes the
other resource. karpy's addition (used by `repack.improve()` only where it lowers the
price): pods that no topology rule involves are re-packed bin by bin —
1. the LP relaxation of "cover the remaining cpu and memory with instance types at their
   cheapest allowed price" (`lp_cover`, optimum on at most two types) names the next bin's type:
   the LP type with the largest share while at least one whole bin is left, otherwise the type
   with the best value-for-price under the LP's dual prices (so the tail gets small nodes);
2. the bin is filled from the remaining pod shapes, always taking the shape that leaves its
   cpu and memory residuals most balanced (in chunks that do not overshoot);
3. each bin is then shrunk to the cheapest type that fits what it holds.
`lp_cover` is also the benchmark's lower bound.
"""

from __future__ import annotations

import numpy as np

_EPS = 1e-9


def _frontier(usable: np.ndarray, price: np.ndarray) -> np.ndarray:
    """Types on the convex hull of (cpu per dollar, memory per dollar): the only ones an LP optimum uses."""
    x = usable[:, 0] / price
    y = usable[:, 1] / price
    order = sorted(range(len(x)), key=lambda i: (x[i], y[i]))
    points = [(0.0, 0.0, -1)] + [(float(x[i]), float(y[i]), i) for i in order]
    hull: list[tuple[float, float, int]] = []
    for chain in (points, points[::-1]):
        half: list[tuple[float, float, int]] = []
        for p in chain:
            while len(half) >= 2:
                (ax, ay, _), (bx, by, _) = half[-2], half[-1]
                if (bx - ax) * (p[1] - ay) - (by - ay) * (p[0] - ax) > 0:
                    break
                half.pop()
            half.append(p)
        hull += half[:-1]
    return np.array(sorted({i for _, _, i in hull if i >= 0}), dtype=np.int64)


def lp_cover(usable: np.ndarray, price: np.ndarray, need: np.ndarray) -> tuple[float, list[tuple[int, float]]]:
    """min Σ price·x s.t. Σ usable[:, :2]·x ≥ need[:2], x ≥ 0; (cost, [(type, x)])."""
    keep = _frontier(usable, price) if len(price) > 8 and bool((price > 0).all()) else np.arange(len(price))
    cost, solution = _lp_cover(usable[keep], price[keep], need)
    return cost, [(int(keep[t]), x) for t, x in solution]


def _lp_cover(usable: np.ndarray, price: np.ndarray, need: np.ndarray) -> tuple[float, list[tuple[int, float]]]:
    cpu = usable[:, 0].astype(np.float64)
    mem = usable[:, 1].astype(np.float64)
    want_cpu, want_mem = float(need[0]), float(need[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.maximum(np.where(want_cpu > 0, want_cpu / cpu, 0.0), np.where(want_mem > 0, want_mem / mem, 0.0))
        single = np.where(np.isfinite(share), price * share, np.inf)
        best_t = int(np.argmin(single))
        best: tuple[float, list[tuple[int, float]]] = (float(single[best_t]), [(best_t, float(share[best_t]))])
        det = cpu[:, None] * mem[None, :] - cpu[None, :] * mem[:, None]
        x = (want_cpu * mem[None, :] - cpu[None, :] * want_mem) / det
        y = (cpu[:, None] * want_mem - want_cpu * mem[:, None]) / det
        cost = price[:, None] * x + price[None, :] * y
        ok = (x >= 0) & (y >= 0) & np.isfinite(cost) & (det != 0)
    if ok.any():
        masked = np.where(ok, cost, np.inf)
        a, b = np.unravel_index(int(np.argmin(masked)), masked.shape)
        if masked[a, b] < best[0] - _EPS:
            best = (float(masked[a, b]), [(int(a), float(x[a, b])), (int(b), float(y[a, b]))])
    return best


def dual_prices(
    usable: np.ndarray, price: np.ndarray, need: np.ndarray, solution: list[tuple[int, float]]
) -> np.ndarray:
    """(price per cpu unit, price per memory unit) that make the LP's types break even."""
    if len(solution) == 2:
        (t1, _), (t2, _) = solution
        matrix = np.array([[usable[t1, 0], usable[t1, 1]], [usable[t2, 0], usable[t2, 1]]], dtype=np.float64)
        try:
            return np.asarray(np.linalg.solve(matrix, np.array([price[t1], price[t2]])))
        except np.linalg.LinAlgError:
            pass
    t = solution[0][0]
    cpu_bound = need[0] * usable[t, 1] >= need[1] * usable[t, 0]
    if cpu_bound:
        return np.array([price[t] / max(usable[t, 0], 1), 0.0])
    return np.array([0.0, price[t] / max(usable[t, 1], 1)])


def _fill(capacity: np.ndarray, shapes: np.ndarray, left: np.ndarray) -> np.ndarray:
    """How many of each shape one bin takes, keeping cpu and memory residuals balanced."""
    take = np.zeros(len(shapes), dtype=np.int64)
    residual = capacity.astype(np.int64).copy()
    scale = np.maximum(capacity[:2].astype(np.float64), 1.0)
    while True:
        avail = left - take
        fit = (avail > 0) & (shapes <= residual).all(axis=1)
        if not fit.any():
            return take
        after = (residual[None, :2] - shapes[:, :2]) / scale
        score = -np.abs(after[:, 0] - after[:, 1])
        score[~fit] = -np.inf
        s = int(np.argmax(score))
        shape = shapes[s]
        positive = shape > 0
        most = int(min(avail[s], np.min(residual[positive] // shape[positive]))) if positive.any() else int(avail[s])
        gap = residual[0] / scale[0] - residual[1] / scale[1]
        step = shape[0] / scale[0] - shape[1] / scale[1]
        count = most if abs(step) < _EPS else max(1, int(gap / step)) if gap / step >= 1 else 1
        count = max(1, min(most, count))
        take[s] += count
        residual -= count * shape


def pack(
    shapes: np.ndarray, counts: np.ndarray, usable: np.ndarray, price: np.ndarray
) -> list[tuple[int, np.ndarray]] | None:
    """Bins as (type index, pods taken per shape); None when some shape fits no type."""
    left = counts.astype(np.int64).copy()
    fits_any = np.array([(usable >= s).all(axis=1).any() for s in shapes], dtype=bool)
    if not fits_any.all():
        return None
    bins: list[tuple[int, np.ndarray]] = []
    while left.sum() > 0:
        remaining = (shapes * left[:, None]).sum(axis=0)
        _, solution = lp_cover(usable, price, remaining)
        t = max(solution, key=lambda tx: tx[1])[0]
        if sum(x for _, x in solution) < 1 + _EPS:
            duals = dual_prices(usable, price, remaining, solution)
            value = (
                np.minimum(usable[:, 0], remaining[0]) * duals[0] + np.minimum(usable[:, 1], remaining[1]) * duals[1]
            )
            t = int(np.argmax(value / price))
        take = _fill(usable[t], shapes, left)
        if take.sum() == 0:
            first = int(np.flatnonzero(left > 0)[0])
            fitting = (usable >= shapes[first]).all(axis=1)
            t = int(np.flatnonzero(fitting)[np.argmin(price[fitting])])
            take = _fill(usable[t], shapes, left)
        content = (shapes * take[:, None]).sum(axis=0)
        fitting = (usable >= content).all(axis=1)
        bins.append((int(np.flatnonzero(fitting)[np.argmin(price[fitting])]), take))
        left -= take
    return bins
