"""The controller's answers to the dashboard: node prices and outlooks, why pods are pending.

`Insight` reads cluster state, the cloud provider's catalogue (for prices), the decision log and
the deprovisioning controller; the HTTP server (`httpserver.py`) serves its answers read-only:

- `nodes()` → `GET /api/v1/nodes`: per owned node, its hourly price and what would happen to it
  now (`deprovisioning/outlook.py`; a drifted node's outlook carries its `drift` reason and
  message as fields), and the last consolidation pass (`consolidation`: when, how
  long, candidates eligible and covered per method, complete or stopped on its budget);
- `pending()` → `GET /api/v1/pods/pending`: per pending pod, its last evaluation by provisioning
  (every pod, every pass: `time`, the outcome as `action`, the `reason`, `since` when it began
  saying so), and the reason's clauses as values (which provisioners failed at which stage:
  `scheduling.types.Clause`).

`prices()` is shared with the capacity metrics (`capacity.py`). Prices come from the catalogue,
read at most once a minute, and never while the cloud does not answer (`cloudhealth.py`): then
the last prices stay, outlooks are left out, and `nodes()` says why in `cloud`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from controller.clock import Clock
from controller.cloudhealth import CloudHealth
from controller.cloudprovider.base import CloudProvider
from controller.cloudprovider.errors import CloudProviderError
from controller.core import labels as L
from controller.core.timestamps import format_timestamp
from controller.decisions import DecisionLog
from controller.deprovisioning.outlook import Outlook
from controller.state.cluster import ClusterState
from controller.state.snapshot import NodeView

log = logging.getLogger(__name__)

PRICE_REFRESH_SECONDS = 60.0
PriceKey = tuple[str, str, str]  # instance type, zone, capacity type


def node_price(node: NodeView, prices: Mapping[PriceKey, float]) -> float | None:
    key = (node.labels.get(L.INSTANCE_TYPE, ""), node.labels.get(L.ZONE, ""), node.labels.get(L.CAPACITY_TYPE, ""))
    return prices.get(key)


class Insight:
    def __init__(
        self,
        state: ClusterState,
        cloud: CloudProvider,
        decisions: DecisionLog,
        clock: Clock,
        outlooks: Callable[[], Mapping[str, Outlook]] | None = None,
        health: CloudHealth | None = None,
        consolidation: Callable[[], Mapping[str, Any]] | None = None,
    ) -> None:
        self._state, self._cloud, self._decisions, self._clock = state, cloud, decisions, clock
        self._outlooks = outlooks
        self._health = health
        self._consolidation = consolidation
        self.settings_problem: Callable[[], str] = lambda: ""  # karpenter-global-settings refused (settingswatch)
        self._lock = threading.Lock()
        self._prices: dict[PriceKey, float] = {}
        self._prices_at = float("-inf")

    def prices(self) -> dict[PriceKey, float]:
        """(instance type, zone, capacity type) → hourly price, from the catalogue (cached a minute)."""
        now = self._clock.now()
        with self._lock:
            if now - self._prices_at < PRICE_REFRESH_SECONDS or not self._cloud_ready():
                return self._prices
        prices: dict[PriceKey, float] = {}
        try:
            types = self._cloud.get_instance_types()
        except CloudProviderError as err:
            log.debug("reading prices: %s", err)
            with self._lock:
                return self._prices
        for it in types:
            for o in it.offerings:
                prices[(it.name, o.zone, o.capacity_type)] = o.price
        with self._lock:
            self._prices, self._prices_at = prices, now
        return prices

    def _cloud_ready(self) -> bool:
        return self._health is None or self._health.ready()

    def nodes(self) -> dict[str, Any]:
        snap = self._state.snapshot()
        prices = self.prices()
        cloud_ready = self._cloud_ready()
        outlooks = self._outlooks() if self._outlooks is not None and snap.synced and cloud_ready else {}
        out: dict[str, Any] = {}
        for name, node in sorted(snap.nodes.items()):
            if not node.owned:
                continue
            entry: dict[str, Any] = {"pricePerHour": node_price(node, prices), "inFlight": node.in_flight}
            if name in outlooks:
                entry["outlook"] = outlooks[name].to_json()
            out[name] = entry
        cloud = self._health.to_json() if self._health is not None else {"ready": True, "problem": ""}
        consolidation = dict(self._consolidation()) if self._consolidation is not None else {}
        return {
            "synced": snap.synced, "time": format_timestamp(snap.now), "cloud": cloud, "nodes": out,
            "consolidation": consolidation, "settingsProblem": self.settings_problem(),
        }  # fmt: skip

    def pending(self) -> dict[str, Any]:
        snap = self._state.snapshot()
        pods: dict[str, Any] = {}
        for pod in snap.pending_pods():
            entry: dict[str, Any] = {"reason": "", "action": "", "time": "", "since": "", "clauses": []}
            if pod.request is not None and pod.request.ignore_reason:
                entry.update(action="ignored", reason=pod.request.ignore_reason)
            found = self._decisions.evaluation(f"pod/{pod.key}")
            if found is not None:
                decision = found.decision
                entry.update(action=decision.action, reason=decision.reason, time=format_timestamp(decision.time))
                entry.update(since=format_timestamp(found.since), clauses=list(decision.extra.get("clauses") or []))
            pods[pod.key] = entry
        return {"synced": snap.synced, "time": format_timestamp(snap.now), "pods": pods}
