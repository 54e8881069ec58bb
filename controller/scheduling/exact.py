"""Near-optimal packing of small batches: a MILP over candidate node types, solved by HiGHS.

Pure and deterministic apart from HiGHS's own `time_limit` (its clock, not ours): the caller's
budget arrives as `SchedulingSettings.exact_time_limit` (seconds per scheduling decision; 0
turns this off). Runs after `repack.improve()` on the same pools — new nodes of one class whose
pods no topology rule involves (see `repack`) — and only where the pool is small enough
(`exact_max_bins`). For one pool and a number of bins B:

    minimise Σ_k Σ_t price_t·y[k,t]
    s.t.     Σ_t y[k,t] ≤ 1                                  (bin k is one type, or closed)
             Σ_s req[s,r]·x[k,s] ≤ Σ_t usable[t,r]·y[k,t]    (every resource of bin k)
             Σ_k x[k,s] = count_s                             (every pod is placed)
             Σ_t price_t·y[k,t] ≥ Σ_t price_t·y[k+1,t]        (symmetry: bins by price)
             Σ_k Σ_t usable[t,r]·y[k,t] ≥ Σ_s req[s,r]·count_s (aggregate cover, a valid cut)
             y binary, x integer ≥ 0

with pods grouped by identical request vectors (shapes s), `usable` = allocatable minus the
provisioner's daemonset overhead, `price` = the offering a launch of that type alone takes
(spot first, as `instancetypes.launch_order`), the types pruned to the non-dominated ones (a
type is dominated when another holds at least as much of everything for no more). The bins
start from today's layout (a MIP start), so HiGHS's answer is never worse; each bin is then
shrunk to its cheapest fitting type and the pool is replaced only if the launches that
`scheduler._result` will compute are cheaper. The pool is solved with h+2, then h+4, then h+8
bins (h = the heuristic's node count; just h when `exact_more_nodes` is off), each from the
best layout so far, while the previous size was proved optimal and budget remains. Anything
else — time limit without a better layout, a layout that does not verify, HiGHS failing —
keeps the heuristic's nodes.

`solve_bins()` is the MILP alone; the benchmark calls it without a time limit for the offline
optimum.
"""

from __future__ import annotations

from dataclasses import dataclass

import highspy
import numpy as np
from highspy._core import _Highs  # the bare solver: the Python wrapper prints a banner to stdout

from controller.scheduling.podstate import PodState
from controller.scheduling.repack import node_price, pools, rebuild
from controller.scheduling.solver import Solver

_EPS = 1e-9
_MAX_TYPES = 16  # candidate types per pool after pruning: a small model proves fast enough to deepen


@dataclass(frozen=True)
class Bins:
    """A packing: for each bin, (candidate type index, pods taken per shape); its price and status."""

    bins: list[tuple[int, np.ndarray]]
    cost: float
    status: str  # "optimal", "time-limit", "infeasible", "error"
    seconds: float


@dataclass(frozen=True)
class Outcome:
    """What the exact pass did to one pool: "improved", "kept" (no cheaper layout, or the time
    limit hit first), "skipped" (too large, or no budget left)."""

    status: str
    solver_status: str
    before: float
    after: float
    seconds: float


def prune(usable: np.ndarray, price: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray:
    """Indices of the types no other type dominates (ties: the lower index survives)."""
    n = len(price)
    idx = np.arange(n)
    covers = (usable[None, :, :] >= usable[:, None, :]).all(axis=2)  # covers[a, b]: b holds all of a
    cheaper = price[None, :] <= price[:, None] + _EPS
    strictly = (usable[None, :, :] > usable[:, None, :]).any(axis=2) | (price[None, :] < price[:, None] - _EPS)
    dominated = (covers & cheaper & (strictly | (idx[None, :] < idx[:, None]))).any(axis=1)
    survivors = np.asarray(~dominated, dtype=bool)
    if keep is not None:
        survivors[keep] = True
    return np.flatnonzero(survivors)


def solve_bins(
    shapes: np.ndarray,
    counts: np.ndarray,
    usable: np.ndarray,
    price: np.ndarray,
    max_bins: int,
    time_limit: float | None,
    start: list[tuple[int, np.ndarray]] | None = None,
) -> Bins:
    """The cheapest packing of `counts[s]` pods of each shape into at most `max_bins` bins.

    `shapes` (S×R) and `usable` (T×R) are integer resource vectors, `price` (T) per type;
    `start` a feasible packing to begin from. Without a time limit the answer is optimal (for
    `max_bins` bins) unless HiGHS fails."""
    n_shapes, n_res = shapes.shape
    n_types = len(price)
    b = max_bins
    scale = np.maximum(np.maximum(usable.max(axis=0), shapes.max(axis=0)), 1).astype(np.float64)
    u = usable / scale
    q = shapes / scale
    ny = b * n_types
    ncol = ny + b * n_shapes

    def y(k: int) -> np.ndarray:
        return np.arange(k * n_types, (k + 1) * n_types)

    def x(k: int) -> np.ndarray:
        return ny + np.arange(k * n_shapes, (k + 1) * n_shapes)

    rows: list[tuple[np.ndarray, np.ndarray, float, float]] = []
    for k in range(b):
        rows.append((y(k), np.ones(n_types), -np.inf, 1.0))
        for r in range(n_res):
            rows.append((np.concatenate([x(k), y(k)]), np.concatenate([q[:, r], -u[:, r]]), -np.inf, 0.0))
    for s in range(n_shapes):
        rows.append((ny + np.arange(b) * n_shapes + s, np.ones(b), float(counts[s]), float(counts[s])))
    for k in range(b - 1):
        rows.append((np.concatenate([y(k), y(k + 1)]), np.concatenate([price, -price]), 0.0, np.inf))
    need = (q * counts[:, None]).sum(axis=0)
    for r in range(n_res):
        rows.append((np.arange(ny), np.tile(u[:, r], b), float(need[r]) * (1 - 1e-9), np.inf))

    starts = np.cumsum([0] + [len(ix) for ix, _, _, _ in rows])
    index = np.concatenate([ix for ix, _, _, _ in rows]).astype(np.int32)
    value = np.concatenate([v for _, v, _, _ in rows]).astype(np.float64)
    cost = np.concatenate([np.tile(price, b), np.zeros(b * n_shapes)]).astype(np.float64)
    upper = np.concatenate([np.ones(ny), np.tile(counts.astype(np.float64), b)])
    h = _Highs()  # not highspy.Highs, whose construction prints to stdout (`karpy simulate --output json`)
    h.setOptionValue("output_flag", False)
    h.setOptionValue("random_seed", 0)
    if time_limit is not None:
        h.setOptionValue("time_limit", max(float(time_limit), 1e-6))
    status = h.passModel(
        ncol,
        len(rows),
        len(index),
        int(highspy.MatrixFormat.kRowwise),
        int(highspy.ObjSense.kMinimize),
        0.0,
        cost,
        np.zeros(ncol),
        upper,
        np.array([lo for _, _, lo, _ in rows], dtype=np.float64),
        np.array([hi for _, _, _, hi in rows], dtype=np.float64),
        starts[:-1].astype(np.int32),
        index,
        value,
        np.ones(ncol, dtype=np.int32),
    )
    if status == highspy.HighsStatus.kError:
        return Bins([], float("inf"), "error", 0.0)
    if start is not None and len(start) <= b:
        col = np.zeros(ncol)
        for k, (t, take) in enumerate(sorted(start, key=lambda bt: -price[bt[0]])):
            col[k * n_types + t] = 1.0
            col[x(k)] = take
        sol = highspy.HighsSolution()
        sol.col_value = col.tolist()
        sol.value_valid = True
        h.setSolution(sol)
    h.run()
    seconds = h.getRunTime()
    model_status = h.getModelStatus()
    label = {
        highspy.HighsModelStatus.kOptimal: "optimal",
        highspy.HighsModelStatus.kTimeLimit: "time-limit",
        highspy.HighsModelStatus.kInfeasible: "infeasible",
    }.get(model_status, "error")
    if h.getInfo().primal_solution_status != 2:  # kSolutionStatusFeasible
        return Bins([], float("inf"), label if label != "optimal" else "error", seconds)
    col = np.asarray(h.getSolution().col_value)
    bins: list[tuple[int, np.ndarray]] = []
    for k in range(b):
        open_types = np.flatnonzero(col[y(k)] > 0.5)
        take = np.rint(col[x(k)]).astype(np.int64)
        if open_types.size == 0 or not take.any():  # closed, or opened empty (a time-limited incumbent)
            if open_types.size == 0 and take.any():
                return Bins([], float("inf"), "error", seconds)
            continue
        bins.append((int(open_types[0]), take))
    return Bins(bins, sum(float(price[t]) for t, _ in bins), label, seconds)


def verified(
    bins: list[tuple[int, np.ndarray]], shapes: np.ndarray, counts: np.ndarray, usable: np.ndarray, price: np.ndarray
) -> list[tuple[int, np.ndarray]] | None:
    """The bins with each shrunk to its cheapest fitting type, or None if they do not hold the pods
    exactly (integer arithmetic: HiGHS works in floating point)."""
    total = np.zeros(len(shapes), dtype=np.int64)
    out = []
    for _, take in bins:
        content = (shapes * take[:, None]).sum(axis=0)
        fitting = (usable >= content).all(axis=1)
        if not fitting.any() or (take < 0).any():
            return None
        out.append((int(np.flatnonzero(fitting)[np.argmin(np.where(fitting, price, np.inf)[fitting])]), take))
        total += take
    return out if np.array_equal(total, counts) else None


def refine(solver: Solver) -> list[Outcome]:
    """Replace each small pool's nodes by the MILP's layout where its launches are cheaper."""
    settings = solver.inp.settings
    budget = settings.exact_time_limit
    outcomes: list[Outcome] = []
    if budget <= 0:
        return outcomes
    for cls, nodes in pools(solver):
        if budget <= 1e-3:
            outcomes.append(Outcome("skipped", "no budget", 0.0, 0.0, 0.0))
            continue
        outcome = _refine_pool(solver, cls.id, nodes, budget)
        budget -= outcome.seconds
        outcomes.append(outcome)
    return outcomes


@dataclass(frozen=True)
class Pool:
    """One pool as a packing problem: pod shapes and counts, candidate types (`types`: indices
    into the provisioner's TypeTable) with their usable resources and launch prices, and today's
    layout over those candidates (`start`, with `inverse`: each pod's shape, pods in node order)."""

    shapes: np.ndarray
    counts: np.ndarray
    inverse: np.ndarray
    types: np.ndarray
    usable: np.ndarray
    price: np.ndarray
    start: list[tuple[int, np.ndarray]]


def pool_problem(solver: Solver, cid: int, nodes: list[int]) -> Pool | None:
    """The packing problem of one pool, or None (no usable type, or a node fits none)."""
    cls = solver.table.classes[cid]
    i = cls.provisioner
    table = solver.tables[i]
    price_all = table.launch_prices(cls.requirements)
    candidates = solver.class_types(cls) & np.isfinite(price_all)
    if (candidates & ~table.exotic).any():
        candidates &= ~table.exotic
    usable_all = table.alloc - solver.daemon_overhead[i]
    candidates &= (usable_all >= 0).all(axis=1)
    idx = np.flatnonzero(candidates)
    if idx.size == 0:
        return None
    pods: list[PodState] = [ps for j in nodes for ps in solver.table.pods[j]]
    shapes, inverse, counts = np.unique(
        np.array([ps.request for ps in pods]), axis=0, return_inverse=True, return_counts=True
    )
    inverse = np.asarray(inverse).reshape(-1)
    usable = usable_all[idx]
    price = price_all[idx]
    start: list[tuple[int, np.ndarray]] = []
    offset = 0
    for j in nodes:
        take = np.bincount(inverse[offset : offset + len(solver.table.pods[j])], minlength=len(shapes))
        offset += len(solver.table.pods[j])
        content = (shapes * take[:, None]).sum(axis=0)
        fitting = np.flatnonzero((usable >= content).all(axis=1))
        if fitting.size == 0:
            return None
        start.append((int(fitting[np.argmin(price[fitting])]), take))
    return Pool(shapes, counts, inverse, idx, usable, price, start)


def _refine_pool(solver: Solver, cid: int, nodes: list[int], budget: float) -> Outcome:
    settings = solver.inp.settings
    cls = solver.table.classes[cid]
    before = sum(node_price(solver, j) for j in nodes)
    h = len(nodes)
    sizes = [h + extra for extra in ((2, 4, 8) if settings.exact_more_nodes else (0,))]
    sizes = [b for b in sizes if b <= settings.exact_max_bins and b >= 2]
    if not sizes:
        return Outcome("skipped", "size", before, before, 0.0)
    pool = pool_problem(solver, cid, nodes)
    if pool is None:
        return Outcome("skipped", "no fitting types", before, before, 0.0)
    shapes, counts, usable, price = pool.shapes, pool.counts, pool.usable, pool.price
    chosen = candidates(usable, price, shapes, counts, [t for t, _ in pool.start])
    position = {int(t): k for k, t in enumerate(chosen)}
    start_sub = [(position[t], take) for t, take in pool.start]
    # deepening: more bins allow cheaper layouts of small nodes but prove slower; each size
    # starts from the best layout so far and gets what is left of the budget
    best, best_cost, status, seconds = start_sub, sum(float(price[chosen[t]]) for t, _ in start_sub), "kept", 0.0
    for size in sizes:
        result = solve_bins(shapes, counts, usable[chosen], price[chosen], size, budget - seconds, best)
        seconds += result.seconds
        status = result.status
        if result.bins and result.cost < best_cost - 1e-9:
            best, best_cost = result.bins, result.cost
        if result.status != "optimal" or budget - seconds <= 1e-3:
            break
    if best is start_sub:
        return Outcome("kept", status, before, before, seconds)
    bins = verified([(int(chosen[t]), take) for t, take in best], shapes, counts, usable, price)
    if bins is None:
        return Outcome("kept", "unverified", before, before, seconds)
    after = _launch_cost(solver, cid, shapes, bins)
    if after >= before - 1e-9:
        return Outcome("kept", status, before, before, seconds)
    pods: list[PodState] = [ps for j in nodes for ps in solver.table.pods[j]]
    by_shape: list[list[PodState]] = [[] for _ in range(len(shapes))]
    for ps, s in zip(pods, pool.inverse, strict=True):
        by_shape[int(s)].append(ps)
    contents = [[by_shape[s].pop() for s in range(len(shapes)) for _ in range(int(take[s]))] for _, take in bins]
    rebuild(solver, cls, nodes, contents)
    return Outcome("improved", status, before, after, seconds)


def candidates(
    usable: np.ndarray, price: np.ndarray, shapes: np.ndarray, counts: np.ndarray, required: list[int]
) -> np.ndarray:
    """The non-dominated types, at most `_MAX_TYPES` — the most of the pool's cpu and memory
    (each capped at all of it) per dollar first — always including `required` (the MIP start's)."""
    survivors = prune(usable, price, np.array(required, dtype=np.int64))
    if survivors.size <= _MAX_TYPES:
        return survivors
    need = (shapes[:, :2] * counts[:, None]).sum(axis=0).astype(np.float64)  # cpu, memory
    share = np.minimum(usable[survivors, :2] / np.maximum(need, 1.0), 1.0).mean(axis=1)
    value = share / np.maximum(price[survivors], _EPS)
    order = survivors[np.argsort(-value, kind="stable")]
    keep = list(dict.fromkeys([*required, *order.tolist()]))[: max(_MAX_TYPES, len(set(required)))]
    return np.array(sorted(keep), dtype=np.int64)


def _launch_cost(solver: Solver, cid: int, shapes: np.ndarray, bins: list[tuple[int, np.ndarray]]) -> float:
    """What the launches of these bins cost, as `scheduler._result` will compute them."""
    cls = solver.table.classes[cid]
    i = cls.provisioner
    table = solver.tables[i]
    total = 0.0
    for _, take in bins:
        content = solver.daemon_overhead[i] + (shapes * take[:, None]).sum(axis=0)
        keep = solver.class_types(cls) & table.fits(content)
        chosen = table.launch(
            table.ordered(keep, cls.requirements, solver.inp.settings.max_instance_types), cls.requirements
        )
        if chosen is None:
            return float("inf")
        total += chosen[3]
    return total
