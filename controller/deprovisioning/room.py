"""A cheap necessary test before single-node consolidation's simulation (issue 21).

Pure. A single-node sweep over 1,000 nodes runs one scheduling simulation per candidate, each
rebuilding the table of every other node and its pods (~1 s at 20,000 pods). Many candidates of a
well-packed fleet cannot go whatever the simulation says, by requests alone: `Room.of(inputs)`
takes, once per pass, every remaining node's free requests (allocatable − the requests of its
pods that take room) and, per valid provisioner, each instance type's allocatable and the
cheapest offering the provisioner's requirements allow; `why_not(cand)`
answers a reason when the candidate can neither be deleted nor replaced:

- a pod of the candidate that fits on no other node by requests must go to a new node, and
- no instance type priced below the candidate holds, by requests, all such pods together.

Both are necessary conditions of what `compute_consolidation` accepts (one new node at most,
strictly cheaper in the worst case, on the same nodes less more constraints: daemonset overhead,
taints, affinity, spread, pending pods and the other rules only remove room), so a candidate
it rejects is one the simulation would reject too; the others are simulated as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from controller.deprovisioning.types import Candidate, Inputs
from controller.scheduling.instancetypes import cheapest_price
from controller.state.snapshot import NodeView


@dataclass(frozen=True, eq=False)
class Room:
    resources: tuple[str, ...]
    names: tuple[str, ...]  # remaining nodes, the rows of `free`
    free: np.ndarray  # (nodes, resources)
    type_allocatable: np.ndarray  # (types, resources)
    type_price: np.ndarray  # (types,): the cheapest offering its provisioner allows

    @cached_property
    def rows(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.names)}

    @staticmethod
    def of(inputs: Inputs) -> Room:
        nodes = [n for n in inputs.nodes if not n.marked_for_deletion]
        # every (provisioner, type) a replacement could launch as, at the cheapest offering that
        # provisioner's requirements allow (a replacement's requirements only narrow them)
        specs = {v.name: v.spec for v in inputs.state.valid_provisioners() if v.spec is not None}
        launchable = [
            (it, cheapest_price(it, specs[name].requirements))
            for name, its in inputs.instance_types.items() if name in specs for it in its
        ]  # fmt: skip
        names: set[str] = set()
        for n in nodes:
            names.update(n.allocatable)
            for p in _taking_room(n):
                names.update(p)
        resources = tuple(sorted(names))
        free = np.array([_vector(n.allocatable, resources) - sum(
            (_vector(p, resources) for p in _taking_room(n)), np.zeros(len(resources), dtype=np.int64)
        ) for n in nodes], dtype=np.int64).reshape(len(nodes), len(resources))  # fmt: skip
        allocatable = np.array([_vector(it.allocatable, resources) for it, _ in launchable], dtype=np.int64)
        prices = [price for _, price in launchable]
        return Room(
            resources, tuple(n.name for n in nodes), free, allocatable.reshape(len(prices), len(resources)),
            np.array(prices, dtype=float),
        )  # fmt: skip

    def why_not(self, cand: Candidate) -> str | None:
        """Why `cand` can be neither deleted nor replaced, by requests alone (None: simulate it)."""
        others = np.ones(len(self.names), dtype=bool)
        row = self.rows.get(cand.name)
        if row is not None:
            others[row] = False
        homeless: list[str] = []
        total = np.zeros(len(self.resources), dtype=np.int64)
        for pod in cand.pods:
            if pod.request is None:
                continue
            request = self._request(pod.request.requests)
            if request is None:
                return None  # a resource no node has: only the simulation can tell
            if not (self.free[others] >= request).all(axis=1).any():
                homeless.append(pod.key)
                total += request
        price = cand.price
        if not homeless or price is None:
            return None  # it may go, or the simulation says why (no price)
        if ((self.type_allocatable >= total).all(axis=1) & (self.type_price < price)).any():
            return None
        return (
            f"pod {homeless[0]} fits on no other node and no instance type cheaper than ${price:.4g}/h holds"
            f" the {len(homeless)} pod(s) that would need a new node"
        )

    def _request(self, requests: Mapping[str, int]) -> np.ndarray | None:
        """The request as a row over `resources` (None when it asks for one no node has: no room)."""
        if any(r not in self.resources and v > 0 for r, v in requests.items()):
            return None
        return _vector(requests, self.resources)


def _taking_room(node: NodeView) -> list[Mapping[str, int]]:
    """The requests of the pods that take room on `node` (as `NodeView.state_node` counts them)."""
    return [p.request.requests for p in node.pods if p.request is not None and not p.terminal and not p.deleting]


def _vector(values: Mapping[str, int], resources: tuple[str, ...]) -> np.ndarray:
    return np.array([int(values.get(r, 0)) for r in resources], dtype=np.int64)
