"""Post-pass: re-pack interchangeable pods of new nodes when that lowers the price (karpy's addition).

Pure; runs after `Solver.solve()`. A pod is interchangeable when no topology group owns,
selects or counts it and it has no host ports, so moving it between new nodes of one class
(same provisioner and requirements) cannot change any other pod's constraints. Such nodes are
re-packed with `packing.pack` (LP-guided, balanced fill, each bin shrunk to its cheapest type)
and replaced only if the launches get cheaper. Provisioners with limits are left alone, since
Karpenter's limit accounting is per node as first computed. Existing nodes are never touched.
"""

from __future__ import annotations

import numpy as np

from controller.scheduling import packing
from controller.scheduling.nodetable import NodeClass
from controller.scheduling.podstate import PodState
from controller.scheduling.solver import Solver


def node_price(solver: Solver, j: int) -> float:
    cls = solver.table.classes[int(solver.table.cls[j])]
    table = solver.tables[cls.provisioner]
    options = solver.table.options[j]
    assert options is not None
    chosen = table.launch(
        table.ordered(options, cls.requirements, solver.inp.settings.max_instance_types), cls.requirements
    )
    return chosen[3] if chosen is not None else float("inf")


def pools(solver: Solver) -> list[tuple[NodeClass, list[int]]]:
    """Per node class, the new nodes whose pods are all interchangeable (provisioners with
    limits left out: Karpenter's limit accounting is per node as first computed)."""
    t = solver.table
    found: dict[int, list[int]] = {}
    for j in range(t.n):
        if not t.new[j] or not t.pods[j] or solver.provisioners[t.provisioner[j]].limits:
            continue
        if all(solver.interchangeable(ps) for ps in t.pods[j]):
            found.setdefault(int(t.cls[j]), []).append(j)
    return [(t.classes[cid], nodes) for cid, nodes in found.items()]


def improve(solver: Solver) -> None:
    """Re-pack interchangeable pods of new nodes where that lowers the total price."""
    for cls, nodes in pools(solver):
        _repack(solver, cls, nodes)


def _repack(solver: Solver, cls: NodeClass, nodes: list[int]) -> None:
    i = cls.provisioner
    table = solver.tables[i]
    candidates = solver.class_types(cls) & np.isfinite(table.prices(cls.requirements))
    if (candidates & ~table.exotic).any():
        candidates &= ~table.exotic
    idx = np.flatnonzero(candidates)
    if idx.size == 0:
        return
    usable = table.alloc[idx] - solver.daemon_overhead[i]
    price = table.prices(cls.requirements)[idx]
    pods = [ps for j in nodes for ps in solver.table.pods[j]]
    shapes, inverse, counts = np.unique(
        np.array([ps.request for ps in pods]), axis=0, return_inverse=True, return_counts=True
    )
    order = np.lexsort((-shapes[:, 1], -shapes[:, 0]))
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    bins = packing.pack(shapes[order], counts[order], usable, price)
    if bins is None or sum(float(price[b]) for b, _ in bins) >= sum(node_price(solver, j) for j in nodes) - 1e-9:
        return
    by_shape: list[list[PodState]] = [[] for _ in order]
    for ps, s in zip(pods, np.asarray(inverse).reshape(-1), strict=True):
        by_shape[int(rank[s])].append(ps)
    rebuild(solver, cls, nodes, [[by_shape[s].pop() for s in range(len(take)) for _ in range(int(take[s]))]
                                 for _, take in bins])  # fmt: skip


def rebuild(solver: Solver, cls: NodeClass, nodes: list[int], contents: list[list[PodState]]) -> None:
    """Replace the pool `nodes` (new nodes of class `cls`) by one new node per entry of `contents`;
    the old names are reused first. Each node's options are the class's types that hold it."""
    i = cls.provisioner
    table = solver.tables[i]
    names = [solver.table.names[j] for j in nodes]
    for j in nodes:
        solver.table.pods[j] = []
        solver.table.npods[j] = 0
        solver.table.reset(j, solver.daemon_overhead[i])
    for k, chosen in enumerate(contents):
        content = solver.daemon_overhead[i] + np.sum([ps.request for ps in chosen], axis=0)
        keep = solver.class_types(cls) & table.fits(content)
        name = names[k] if k < len(names) else solver.new_name(i)
        j = solver.table.add(name, cls, content, table.alloc[keep].max(axis=0), target=True, new=True)
        solver.table.options[j] = keep
        solver.table.pods[j] = sorted(chosen, key=lambda ps: ps.index)
        solver.table.npods[j] = len(chosen)
