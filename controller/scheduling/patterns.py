"""The packing MILP of `exact.py` over node patterns: column generation, a dive, an integer master.

Pure apart from its time budget (HiGHS's own `time_limit` and a monotonic timer between HiGHS
calls: both only cut the search short). A pattern is one node: a type t and how many pods of
each shape s it holds (`take`, fitting `usable[t]`). Nodes with the same pattern are
interchangeable, so the model counts them (λ_p) instead of numbering bins, whose permutations
the per-bin model of `exact.solve_bins` has to rule out one by one:

    minimise Σ_p price_t(p)·λ_p + Σ_t price_t·z_t
    s.t.     Σ_p take_p[s]·λ_p + Σ_t X[t,s] ≥ count_s    (every pod placed; surplus places stay empty)
             Σ_s req[s,r]·X[t,s] ≤ usable[t,r]·z_t        (one free node per type: any pods that fit)
             Σ_p λ_p + Σ_t z_t ≤ max_nodes                 (only when the caller caps the node count)
             λ, X integer ≥ 0, z binary

1. Column generation (Gilmore–Gomory) on the LP without free nodes: solve it over the patterns
   so far; for every type find the pattern of the most dual value (`_price`: an integer
   knapsack, by enumerating the fitting counts of all but one shape, which then fills the rest,
   HiGHS when there are too many; types whose fractional bound cannot pay are skipped); add those
   that beat their type's price, until none does — the LP is then optimal over every pattern
   and its value a lower bound on any packing (`Packing.bound`).
2. A dive: fix the patterns the LP uses whole (else its largest fraction, once), each node on
   the cheapest type that holds what it got, and re-generate on what is left; whenever the rest
   fits one node, that completion is a candidate. Fast, and usually within a few per cent.
3. The residual problem: the nodes the first LP uses whole are kept, the integer master below
   (half the time left) places the rest.
4. The integer master above over the generated patterns (capped at the counts, those another
   one beats dropped); the cheaper of its packing and the best so far is kept (an objective
   cutoff made HiGHS slower to find better ones). The free nodes (the per-bin model with
   one bin per type, so without its symmetry) hold the leftovers no generated pattern fits
   well: the cheapest packings use those odd nodes. No MIP start is passed: highspy 1.16
   (presolve on) returned the start as optimal with an objective that did not match it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import highspy
import numpy as np
from highspy._core import _Highs  # the bare solver: the Python wrapper prints a banner to stdout

_EPS = 1e-9
_GRID = 20_000  # most fitting count vectors the pricing enumerates per type before HiGHS takes over
_ROUNDS = 60  # column-generation rounds per LP at most

Bin = tuple[int, np.ndarray]  # (type index, pods per shape)


@dataclass(frozen=True)
class Packing:
    """The bins found (empty when none beat the start), their price, the LP lower bound (0 when
    the column generation did not finish), HiGHS's status on the integer master and the seconds."""

    bins: list[Bin]
    cost: float
    bound: float
    status: str  # "optimal" (over the generated patterns), "time-limit", "infeasible", "error"
    seconds: float


def per_node(shapes: np.ndarray, counts: np.ndarray, usable: np.ndarray) -> np.ndarray:
    """fit[t, s]: how many pods of shape s one node of type t holds on its own (capped at count_s)."""
    positive = shapes > 0
    each = usable[:, None, :] // np.where(positive, shapes, 1)[None, :, :]
    ratio = np.where(positive[None, :, :], each, np.iinfo(np.int64).max)
    fit = np.minimum(ratio.min(axis=2), counts[None, :])
    fit[(usable < 0).any(axis=1)] = 0
    return np.asarray(np.maximum(fit, 0), dtype=np.int64)


def _label(h: _Highs) -> str:
    return {
        highspy.HighsModelStatus.kOptimal: "optimal",
        highspy.HighsModelStatus.kTimeLimit: "time-limit",
        highspy.HighsModelStatus.kInfeasible: "infeasible",
    }.get(h.getModelStatus(), "error")


Row = tuple[np.ndarray, np.ndarray, float, float]  # column indices, values, lower, upper


def _run(
    cost: np.ndarray, upper: np.ndarray, rows: list[Row], integer: bool, time_limit: float | None, sense: int = 1
) -> _Highs | None:
    """Build and solve one model (columns ≥ 0), or None when HiGHS rejects it."""
    h = _Highs()  # not highspy.Highs, whose construction prints to stdout (`karpy simulate --output json`)
    h.setOptionValue("output_flag", False)
    h.setOptionValue("random_seed", 0)
    if time_limit is not None:
        h.setOptionValue("time_limit", max(float(time_limit), 1e-6))
    if integer:
        h.setOptionValue("mip_rel_gap", 1e-7)
    starts = np.cumsum([0] + [len(ix) for ix, _, _, _ in rows])
    n = len(cost)
    status = h.passModel(
        n,
        len(rows),
        int(starts[-1]),
        int(highspy.MatrixFormat.kRowwise),
        int(highspy.ObjSense.kMinimize if sense > 0 else highspy.ObjSense.kMaximize),
        0.0,
        cost.astype(np.float64),
        np.zeros(n),
        upper.astype(np.float64),
        np.array([lo for _, _, lo, _ in rows], dtype=np.float64),
        np.array([hi for _, _, _, hi in rows], dtype=np.float64),
        starts[:-1].astype(np.int32),
        np.concatenate([ix for ix, _, _, _ in rows]).astype(np.int32),
        np.concatenate([v for _, v, _, _ in rows]).astype(np.float64),
        np.full(n, 1 if integer else 0, dtype=np.int32),
    )
    if status == highspy.HighsStatus.kError:
        return None
    return h


def _lp(
    columns: np.ndarray, cost: np.ndarray, counts: np.ndarray, max_nodes: int | None, time_limit: float | None
) -> tuple[np.ndarray, np.ndarray] | None:
    """The LP master over `columns` (P×S): (λ, duals of the count rows), or None."""
    n_cols, n_shapes = columns.shape
    rows: list[Row] = []
    for s in range(n_shapes):
        ix = np.flatnonzero(columns[:, s])
        rows.append((ix, columns[ix, s].astype(np.float64), float(counts[s]), np.inf))
    if max_nodes is not None:
        rows.append((np.arange(n_cols), np.ones(n_cols), 0.0, float(max_nodes)))
    h = _run(cost, np.full(n_cols, float(counts.max())), rows, False, time_limit)
    if h is None:
        return None
    h.run()
    solution = h.getSolution()
    if _label(h) != "optimal" or not solution.dual_valid:
        return None
    return np.asarray(solution.col_value), np.maximum(np.asarray(solution.row_dual)[:n_shapes], 0.0)


def _knapsack_bound(shapes: np.ndarray, usable: np.ndarray, bound: np.ndarray, duals: np.ndarray) -> float:
    """An upper bound on the dual value one node of capacity `usable` holds (at most `bound[s]`
    of each shape): the least, over resources, of that resource's fractional knapsack."""
    best = float(bound @ duals)
    for r in range(shapes.shape[1]):
        weight = shapes[:, r].astype(np.float64)
        value, room = 0.0, float(usable[r])
        for s in np.argsort(-duals / np.maximum(weight, _EPS), kind="stable"):
            if bound[s] <= 0 or duals[s] <= 0:
                continue
            take = float(bound[s]) if weight[s] <= 0 else min(float(bound[s]), room / weight[s])
            value += take * duals[s]
            room -= take * weight[s]
            if room <= 0:
                break
        best = min(best, value)
    return best


def _price(
    shapes: np.ndarray,
    usable: np.ndarray,
    price: np.ndarray,
    fit: np.ndarray,
    duals: np.ndarray,
    left: Callable[[], float | None],
) -> tuple[np.ndarray, bool]:
    """Per type, the pattern (pods per shape, at most `fit`) of the largest dual value that fits
    one node — none for the types whose knapsack bound shows no pattern beats their price, nor
    for those left when `left()` (seconds) runs out — and whether every one is proved best."""
    n_types, n_shapes = fit.shape
    out = np.zeros((n_types, n_shapes), dtype=np.int64)
    proved = True
    useful = duals > _EPS
    for t in range(n_types):
        bound = np.where(useful, fit[t], 0)
        if not bound.any() or _knapsack_bound(shapes, usable[t], bound, duals) <= price[t] * (1 + 1e-7) + _EPS:
            continue
        remaining = left()
        if remaining is not None and remaining <= 0:
            return out, False
        free = int(np.argmax(np.where(useful, bound, -1)))  # the shape taken greedily last
        others = [s for s in np.argsort(bound, kind="stable") if s != free and bound[s] > 0]
        takes = _feasible(shapes, usable[t], bound, others)
        if takes is None:
            out[t], optimal = _price_milp(shapes, usable[t], bound, duals, remaining)
            proved &= optimal
            continue
        residual = usable[t][None, :] - takes @ shapes
        positive = shapes[free] > 0
        room = (residual[:, positive] // shapes[free][positive]).min(axis=1)
        takes[:, free] = np.minimum(room, bound[free])
        out[t] = takes[int(np.argmax(takes @ duals))]
    return out, proved


def _feasible(shapes: np.ndarray, usable: np.ndarray, bound: np.ndarray, others: list[int]) -> np.ndarray | None:
    """Every count vector over the shapes `others` (at most `bound` each) that fits `usable`,
    built shape by shape keeping only what fits; None past `_GRID` of them."""
    takes = np.zeros((1, len(shapes)), dtype=np.int64)
    residual = usable[None, :].astype(np.int64)
    for s in others:
        k = np.arange(int(bound[s]) + 1)
        after = residual[:, None, :] - k[None, :, None] * shapes[s][None, None, :]
        ok = (after >= 0).all(axis=2)
        rows, counts = np.nonzero(ok)
        if len(rows) > _GRID:
            return None
        takes = takes[rows]
        takes[:, s] = counts
        residual = after[rows, counts]
    return takes


def _price_milp(
    shapes: np.ndarray, usable: np.ndarray, bound: np.ndarray, duals: np.ndarray, time_limit: float | None
) -> tuple[np.ndarray, bool]:
    n_shapes, n_res = shapes.shape
    every = np.arange(n_shapes)
    rows: list[Row] = [(every, shapes[:, r].astype(np.float64), -np.inf, float(usable[r])) for r in range(n_res)]
    h = _run(duals, bound, rows, True, time_limit, sense=-1)
    none = np.zeros(n_shapes, dtype=np.int64)
    if h is None:
        return none, False
    h.run()
    if h.getInfo().primal_solution_status != 2:  # kSolutionStatusFeasible
        return none, False
    take = np.rint(np.asarray(h.getSolution().col_value)).astype(np.int64)
    if not (take @ shapes <= usable).all() or (take < 0).any():
        return none, False
    return take, _label(h) == "optimal"


class _Columns:
    """The generated patterns, without duplicates."""

    def __init__(self, n_shapes: int) -> None:
        self.types: list[int] = []
        self.takes: list[np.ndarray] = []
        self._seen: set[tuple[int, bytes]] = set()
        self.n_shapes = n_shapes

    def add(self, t: int, take: np.ndarray) -> bool:
        take = take.astype(np.int64)
        key = (t, take.tobytes())
        if key in self._seen or not take.any():
            return False
        self._seen.add(key)
        self.types.append(t)
        self.takes.append(take)
        return True


def solve_patterns(
    shapes: np.ndarray,
    counts: np.ndarray,
    usable: np.ndarray,
    price: np.ndarray,
    time_limit: float | None,
    start: list[Bin],
    max_nodes: int | None = None,
) -> Packing:
    """The cheapest packing found (see the module docstring) within `time_limit` seconds (None:
    until the integer master is proved); `start` is a feasible packing, its bins the first patterns.
    Every bin returned is on the cheapest type that holds its pods."""
    began = time.perf_counter()

    def left() -> float | None:
        return None if time_limit is None else time_limit - (time.perf_counter() - began)

    def cheapest(take: np.ndarray) -> int:
        fitting = (usable >= take @ shapes).all(axis=1)
        return int(np.flatnonzero(fitting)[np.argmin(price[fitting])])

    n_shapes = len(shapes)
    cols = _Columns(n_shapes)
    fit = per_node(shapes, counts, usable)
    for t, take in start:
        cols.add(int(t), take)
    for t, s in zip(*np.nonzero(fit), strict=True):  # one shape per node: the master is always feasible
        single = np.zeros(n_shapes, dtype=np.int64)
        single[s] = fit[t, s]
        cols.add(int(t), single)

    def generate(demand: np.ndarray, nodes: int | None) -> tuple[np.ndarray | None, float, bool]:
        """Column generation for `demand`: the LP's λ, its value, and whether it is optimal over all patterns."""
        capped = per_node(shapes, demand, usable)
        lam = None
        for _ in range(_ROUNDS):
            remaining = left()
            if remaining is not None and remaining <= 0:
                return None, 0.0, False
            cost = price[np.array(cols.types)]
            solved = _lp(np.array(cols.takes), cost, demand, nodes, remaining)
            if solved is None:
                return None, 0.0, False
            lam, duals = solved
            best, proved = _price(shapes, usable, price, capped, duals, left)
            gain = best @ duals - price
            added = [cols.add(int(t), best[t]) for t in np.flatnonzero(gain > price * 1e-7 + _EPS)]
            if not any(added):  # no pattern prices out: the LP is optimal over all of them
                return lam, float(cost @ lam), proved
        return lam, 0.0, False

    lam, value, complete = generate(counts.astype(np.int64), max_nodes)
    bound = value if complete else 0.0
    root = lam
    best_bins, best_cost = _dive(lam, cols, counts, usable, price, shapes, max_nodes, cheapest, generate)
    remaining = left()
    if root is None or (remaining is not None and remaining <= 0):
        return Packing(best_bins, best_cost, bound, "time-limit", time.perf_counter() - began)
    # the residual problem: keep the nodes the root LP uses whole, solve the rest exactly
    fixed: list[Bin] = []
    demand = counts.astype(np.int64).copy()
    for p in np.flatnonzero(root >= 1 - 1e-6):
        for _ in range(int(np.floor(root[p] + 1e-6))):
            take = np.minimum(cols.takes[p], demand)
            if take.any():
                fixed.append((cheapest(take), take))
                demand -= take
    nodes = None if max_nodes is None else max_nodes - len(fixed)
    if fixed and demand.any() and (nodes is None or nodes > 0):
        fixed_cost = sum(float(price[t]) for t, _ in fixed)
        residual = left()
        residual = None if residual is None else residual / 2
        _, rest = _integer(shapes, demand, usable, price, cols, nodes, residual)
        cost = fixed_cost + sum(float(price[cheapest(take)]) for _, take in rest)
        if rest and cost < best_cost - _EPS:
            best_bins, best_cost = [*fixed, *[(cheapest(take), take) for _, take in rest]], cost
    status, bins = "time-limit", list[Bin]()
    remaining = left()
    if remaining is None or remaining > 0:
        status, bins = _integer(shapes, counts, usable, price, cols, max_nodes, remaining)
    seconds = time.perf_counter() - began
    bins = [(cheapest(take), take) for _, take in bins]
    cost = sum(float(price[t]) for t, _ in bins)
    if not bins or cost >= best_cost - _EPS:
        return Packing(best_bins, best_cost, bound, status, seconds)
    return Packing(bins, cost, bound, status, seconds)


Generate = Callable[[np.ndarray, "int | None"], "tuple[np.ndarray | None, float, bool]"]


def _dive(
    lam: np.ndarray | None,
    cols: _Columns,
    counts: np.ndarray,
    usable: np.ndarray,
    price: np.ndarray,
    shapes: np.ndarray,
    max_nodes: int | None,
    cheapest: Callable[[np.ndarray], int],
    generate: Generate,
) -> tuple[list[Bin], float]:
    """Step 2 of the module docstring: the best packing the dive meets, or ([], inf)."""
    best: list[Bin] = []
    best_cost = float("inf")
    demand = counts.astype(np.int64).copy()
    fixed: list[Bin] = []
    cost = 0.0
    while lam is not None and demand.any():
        if max_nodes is None or len(fixed) < max_nodes:
            last = (usable >= demand @ shapes).all(axis=1)
            if last.any() and cost + float(price[last].min()) < best_cost - _EPS:
                best, best_cost = [*fixed, (cheapest(demand), demand.copy())], cost + float(price[last].min())
        whole = np.flatnonzero(lam >= 1 - 1e-6)
        picks = [(int(p), int(np.floor(lam[p] + 1e-6))) for p in whole] if whole.size else [(int(np.argmax(lam)), 1)]
        for p, copies in picks:
            for _ in range(copies):
                take = np.minimum(cols.takes[p], demand)
                if take.any():
                    t = cheapest(take)
                    fixed.append((t, take))
                    cost += float(price[t])
                    demand -= take
        nodes = None if max_nodes is None else max_nodes - len(fixed)
        if not demand.any() or (nodes is not None and nodes <= 0) or cost >= best_cost:
            break
        lam, _, _ = generate(demand, nodes)
    if not demand.any() and (max_nodes is None or len(fixed) <= max_nodes) and cost < best_cost - _EPS:
        best, best_cost = fixed, cost
    return best, best_cost


def _undominated(takes: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Indices of the patterns no other one beats: holding at least as many of every shape for no
    more (ties: the first survives). A cover never needs a beaten pattern."""
    order = np.arange(len(cost))
    covers = (takes[None, :, :] >= takes[:, None, :]).all(axis=2)  # covers[a, b]: b holds all of a
    cheaper = cost[None, :] <= cost[:, None] + _EPS
    strictly = (takes[None, :, :] > takes[:, None, :]).any(axis=2) | (cost[None, :] < cost[:, None] - _EPS)
    return np.flatnonzero(~(covers & cheaper & (strictly | (order[None, :] < order[:, None]))).any(axis=1))


def _integer(
    shapes: np.ndarray,
    counts: np.ndarray,
    usable: np.ndarray,
    price: np.ndarray,
    cols: _Columns,
    max_nodes: int | None,
    time_limit: float | None,
) -> tuple[str, list[Bin]]:
    """Step 3 of the module docstring: HiGHS's status and the bins of its best packing (or [])."""
    useful = _undominated(np.minimum(np.array(cols.takes), counts), price[np.array(cols.types)])
    takes = np.minimum(np.array(cols.takes), counts)[useful]
    types = [cols.types[p] for p in useful]
    n_cols, n_shapes = takes.shape
    n_types, n_res = usable.shape
    fit = per_node(shapes, counts, usable)
    can_open = np.asarray((fit > 0).any(axis=1), dtype=bool)
    z0, x0 = n_cols, n_cols + n_types  # columns: λ (n_cols), z (n_types), X (n_types × n_shapes)
    scale = np.maximum(np.maximum(np.abs(usable).max(axis=0), shapes.max(axis=0)), 1).astype(np.float64)
    u, q = usable / scale, shapes / scale
    rows: list[Row] = []
    for s in range(n_shapes):
        ix = np.flatnonzero(takes[:, s])
        xs = x0 + np.arange(n_types) * n_shapes + s
        values = np.concatenate([takes[ix, s], np.ones(n_types)])
        rows.append((np.concatenate([ix, xs]), values, float(counts[s]), np.inf))
    for t in np.flatnonzero(can_open):
        xs = x0 + t * n_shapes + np.arange(n_shapes)
        for r in range(n_res):
            rows.append((np.append(xs, z0 + t), np.append(q[:, r], -u[t, r]), -np.inf, 0.0))
        for s in range(n_shapes):
            if 0 < fit[t, s] < counts[s]:  # valid, and tighter than the resource rows in the LP
                rows.append((np.array([xs[s], z0 + t]), np.array([1.0, -float(fit[t, s])]), -np.inf, 0.0))
    if max_nodes is not None:
        rows.append((np.arange(x0), np.ones(x0), -np.inf, float(max_nodes)))
    upper = np.concatenate([np.full(n_cols, float(counts.max())), can_open, (fit * can_open[:, None]).reshape(-1)])
    cost = np.concatenate([price[np.array(types)], price, np.zeros(n_types * n_shapes)])
    h = _run(cost, upper, rows, True, time_limit)
    if h is None:
        return "error", []
    h.run()
    label = _label(h)
    if h.getInfo().primal_solution_status != 2:  # kSolutionStatusFeasible
        return (label if label != "optimal" else "infeasible"), []
    value = np.rint(np.asarray(h.getSolution().col_value)).astype(np.int64)
    need = counts.astype(np.int64).copy()
    bins: list[Bin] = []
    free = np.flatnonzero(value[z0:x0])
    wanted: list[Bin] = [(int(t), value[x0 + t * n_shapes : x0 + (t + 1) * n_shapes]) for t in free]
    wanted += [(types[p], takes[p]) for p in np.flatnonzero(value[:n_cols]) for _ in range(int(value[p]))]
    for kind, want in wanted:  # surplus places stay empty: take only what is still needed
        take = np.minimum(want, need)
        need -= take
        if take.any():
            bins.append((kind, take))
    return (label, bins) if not need.any() else ("error", [])
