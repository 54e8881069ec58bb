"""One provisioner's instance types as numpy arrays, for vectorised filtering.

Internal to the scheduler. Rows are instance types (sorted by name), columns the resources
the solve cares about. `compatible(requirements)` is spec §5.5.2 (a)+(c) for every type at
once — the type's requirements intersect the node's, and it has an available offering in an
allowed zone with an allowed capacity type — cached per distinct requirement set.
`launch()` is the offering a launch of some of these types takes, decided by
`instancetypes.launch_order()` (the rule every cloud provider's `create()` follows too).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from controller.core.labels import CAPACITY_TYPE, CAPACITY_TYPE_SPOT, ZONE
from controller.core.requirements import Requirement, Requirements
from controller.scheduling.instancetypes import INSTANCE_TYPE_KEYS, is_exotic, launch_order
from controller.scheduling.types import InstanceType

_TYPE_KEYS = frozenset(INSTANCE_TYPE_KEYS) - {ZONE, CAPACITY_TYPE}


class TypeTable:
    """Instance types of one provisioner (kubelet settings applied) over a fixed resource order."""

    def __init__(self, types: Sequence[InstanceType], resources: Sequence[str]) -> None:
        self.types = sorted(types, key=lambda it: it.name)
        self.resources = tuple(resources)
        count = len(self.types)
        self.alloc = np.zeros((count, len(resources)), dtype=np.int64)
        self.capacity = np.zeros((count, len(resources)), dtype=np.int64)
        for i, it in enumerate(self.types):
            allocatable = it.allocatable
            if any(v < 0 for v in allocatable.values()):
                self.alloc[i, :] = -1  # a negative allocatable value means nothing fits
            else:
                self.alloc[i] = [allocatable.get(r, 0) for r in resources]
            self.capacity[i] = [it.capacity.get(r, 0) for r in resources]
        self.columns = np.ascontiguousarray(self.alloc.T)  # one row per resource, for fast fit checks
        self.exotic = np.array([is_exotic(it) for it in self.types], dtype=bool)
        zones: dict[str, int] = {}
        cts: dict[str, int] = {}
        rows = [(i, o) for i, it in enumerate(self.types) for o in it.offerings if o.available]
        self.off_type = np.array([i for i, _ in rows], dtype=np.int64)
        self.off_zone = np.array([zones.setdefault(o.zone, len(zones)) for _, o in rows], dtype=np.int64)
        self.off_ct = np.array([cts.setdefault(o.capacity_type, len(cts)) for _, o in rows], dtype=np.int64)
        self.off_price = np.array([o.price for _, o in rows], dtype=np.float64)
        self.zone_names = list(zones)
        self.ct_names = list(cts)
        self._key_masks: dict[Requirement, np.ndarray] = {}
        self._offering_masks: dict[tuple[Requirement, Requirement], np.ndarray] = {}
        self._compatible: dict[frozenset[Requirement], np.ndarray] = {}
        self._prices: dict[tuple[Requirement, Requirement], np.ndarray] = {}
        self._launch_prices: dict[tuple[Requirement, Requirement], np.ndarray] = {}
        self.all = np.ones(count, dtype=bool)
        self._index = {it.name: i for i, it in enumerate(self.types)}

    def __len__(self) -> int:
        return len(self.types)

    def _key_mask(self, req: Requirement) -> np.ndarray:
        mask = self._key_masks.get(req)
        if mask is None:
            theirs = [it.requirements.get(req.key) for it in self.types]
            mask = np.array([t is None or req.intersects(t) for t in theirs], dtype=bool)
            self._key_masks[req] = mask
        return mask

    def _allowed_offerings(self, requirements: Requirements) -> np.ndarray:
        zone = requirements.get_or_exists(ZONE)
        ct = requirements.get_or_exists(CAPACITY_TYPE)
        mask = self._offering_masks.get((zone, ct))
        if mask is None:
            zone_ok = np.array([zone.has(z) for z in self.zone_names] or [False], dtype=bool)
            ct_ok = np.array([ct.has(c) for c in self.ct_names] or [False], dtype=bool)
            mask = zone_ok[self.off_zone] & ct_ok[self.off_ct] if self.off_type.size else np.zeros(0, dtype=bool)
            self._offering_masks[(zone, ct)] = mask
        return mask

    def requirement_mask(self, requirements: Requirements) -> np.ndarray:
        """Types whose requirements intersect these (zone and capacity type aside)."""
        mask = self.all
        for key, req in requirements.items():
            if key in _TYPE_KEYS:
                mask = mask & self._key_mask(req)
        return mask

    def offering_mask(self, requirements: Requirements) -> np.ndarray:
        """Types with an available offering in an allowed zone and capacity type."""
        has = np.zeros(len(self.types), dtype=bool)
        has[self.off_type[self._allowed_offerings(requirements)]] = True
        return has

    def compatible(self, requirements: Requirements, signature: frozenset[Requirement]) -> np.ndarray:
        mask = self._compatible.get(signature)
        if mask is None:
            mask = self.requirement_mask(requirements) & self.offering_mask(requirements)
            self._compatible[signature] = mask
        return mask

    def fits(self, need: np.ndarray) -> np.ndarray:
        """Types whose allocatable holds `need` in every resource."""
        mask = self.columns[0] >= need[0]
        for k in range(1, need.shape[0]):
            mask &= self.columns[k] >= need[k]
        return np.asarray(mask)

    def prices(self, requirements: Requirements) -> np.ndarray:
        """Cheapest allowed offering per type (infinity when none)."""
        key = (requirements.get_or_exists(ZONE), requirements.get_or_exists(CAPACITY_TYPE))
        price = self._prices.get(key)
        if price is None:
            allowed = self._allowed_offerings(requirements)
            price = np.full(len(self.types), np.inf)
            np.minimum.at(price, self.off_type[allowed], self.off_price[allowed])
            self._prices[key] = price
        return price

    def launch_prices(self, requirements: Requirements) -> np.ndarray:
        """Per type, the price of the offering a launch of that type alone takes (infinity when
        none): its cheapest allowed spot offering if it has one, else its cheapest on-demand one
        (`instancetypes.launch_order` tries spot first)."""
        key = (requirements.get_or_exists(ZONE), requirements.get_or_exists(CAPACITY_TYPE))
        price = self._launch_prices.get(key)
        if price is None:
            allowed = self._allowed_offerings(requirements)
            spot = np.full(len(self.types), np.inf)
            if CAPACITY_TYPE_SPOT in self.ct_names:
                is_spot = allowed & (self.off_ct == self.ct_names.index(CAPACITY_TYPE_SPOT))
                np.minimum.at(spot, self.off_type[is_spot], self.off_price[is_spot])
            price = np.where(np.isfinite(spot), spot, self.prices(requirements))
            self._launch_prices[key] = price
        return price

    def ordered(self, mask: np.ndarray, requirements: Requirements, limit: int) -> list[int]:
        """Indices of the masked types, cheapest first (ties by name), at most `limit`."""
        idx = np.flatnonzero(mask)
        price = self.prices(requirements)[idx]
        order = np.lexsort((idx, price))[:limit]
        return [int(i) for i in idx[order]]

    def launch(self, indices: Sequence[int], requirements: Requirements) -> tuple[int, str, str, float] | None:
        """(type index, zone, capacity type, price) a launch of these candidates takes."""
        options = launch_order([self.types[i] for i in indices], requirements)
        if not options:
            return None
        first = options[0]
        index = self._index[first.instance_type.name]
        return index, first.offering.zone, first.offering.capacity_type, first.offering.price
