"""How much consolidation and right-sizing have saved, kept in the cluster: the dashboard's savings.

`SavingsLedger` is a controller (job `savings`, the leader's only): every pass it takes the
deprovisioning commands the decision log says were carried out (`deprovisioning/decisionlog.py`:
hourly prices before and after) and not failed since, and keeps them in a ConfigMap
(`--savings-configmap`, in the leader-election namespace; created when missing, updated with its
resourceVersion, a conflict re-read on the next pass), so they survive a restart and a leader
change — a replica that starts leading (first, or again after another led) reads the ConfigMap
first, and a leader shutting down stores what it owes before it lets the Lease go (`main.run`).
The answer says `persisted: true` only when every command it counts is in the ConfigMap: a
command counted from the decision log is not stored until that pass's write succeeds (a leader
killed before then loses it). Entries older than `RETENTION_SECONDS` are dropped, at most
`MAX_ENTRIES` kept.

`summary(entries, now)` is pure: the hourly rate saved (Σ before − after), and the dollars saved
over the last day and week (each command saves its rate from when it ran). Neighbours:
`service.py` (`opportunity`: what blocked nodes would save), `httpserver.py` serves both at
`GET /api/v1/savings`.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from controller.clock import Clock
from controller.core.timestamps import format_timestamp
from controller.decisions import DEPROVISIONING_FAILED, DecisionLog
from controller.kube.client import Kube
from controller.kube.errors import ConflictError, KubeError, NotFoundError
from controller.kube.resources import CONFIGMAPS

log = logging.getLogger(__name__)

DAY, WEEK = 86_400.0, 7 * 86_400.0
RETENTION_SECONDS = WEEK + DAY
MAX_ENTRIES = 2_000
DATA_KEY = "savings.json"
STALE_SECONDS = 15.0  # a replica whose job has not run for this long (a standby) reads the ConfigMap to answer
CONTROLLER = "deprovisioning"


@dataclass(frozen=True, slots=True)
class Entry:
    """One command carried out: when, what, and the hourly prices before and after."""

    time: float
    action: str
    nodes: tuple[str, ...]
    before: float
    after: float

    @property
    def key(self) -> tuple[float, tuple[str, ...]]:
        return self.time, self.nodes

    @property
    def rate(self) -> float:
        return self.before - self.after

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "nodes": list(self.nodes)}

    @staticmethod
    def from_json(obj: Any) -> Entry | None:
        try:
            return Entry(float(obj["time"]), str(obj["action"]), tuple(str(n) for n in obj["nodes"]),
                         float(obj["before"]), float(obj["after"]))  # fmt: skip
        except (KeyError, TypeError, ValueError):
            return None


def summary(entries: Sequence[Entry], now: float) -> dict[str, Any]:
    """The hourly rate saved and the dollars saved over the last day and week (pure)."""

    def dollars(window: float) -> float:
        return sum(e.rate * max(0.0, now - max(e.time, now - window)) / 3600.0 for e in entries)

    return {
        "savingPerHour": round(sum(e.rate for e in entries), 6),
        "lastDay": round(dollars(DAY), 4),
        "lastWeek": round(dollars(WEEK), 4),
        "commands": len(entries),
        "since": format_timestamp(min(e.time for e in entries)) if entries else "",
        "recent": [
            {**e.to_json(), "time": format_timestamp(e.time), "savingPerHour": round(e.rate, 6)}
            for e in sorted(entries, key=lambda e: -e.time)[:20]
        ],
    }


def carried_out(decisions: Iterable[Any]) -> tuple[list[Entry], list[tuple[float, tuple[str, ...]]]]:
    """The deprovisioning commands carried out, and the failures (time, nodes) recorded after them."""
    entries, failures = [], []
    for d in decisions:
        if d.controller != CONTROLLER:
            continue
        nodes = tuple(str(n) for n in (d.extra or {}).get("nodes", ()))
        if d.action == DEPROVISIONING_FAILED:
            failures.append((d.time, nodes))
        elif d.price_before is not None and d.price_after is not None:
            entries.append(Entry(d.time, d.action, nodes, float(d.price_before), float(d.price_after)))
    return entries, failures


def _failed(entry: Entry, failures: Iterable[tuple[float, tuple[str, ...]]]) -> bool:
    return any(nodes == entry.nodes and when >= entry.time for when, nodes in failures)


class SavingsLedger:
    name = "savings"

    def __init__(self, kube: Kube, decisions: DecisionLog, clock: Clock, namespace: str, configmap: str) -> None:
        self._kube, self._decisions, self._clock = kube, decisions, clock
        self.namespace, self.configmap = namespace, configmap
        self._lock = threading.Lock()
        self._entries: dict[tuple[float, tuple[str, ...]], Entry] = {}
        self._loaded = False
        self._dirty = False  # a write is owed (a change not stored yet, e.g. after a conflict)
        self._stored: frozenset[tuple[float, tuple[str, ...]]] = frozenset()  # the entries the ConfigMap holds
        self._version = ""
        self._meta: dict[str, Any] = {}  # labels and annotations as read (Helm's stay on the object)
        self._last_pass = float("-inf")  # when reconcile() last ran (only the leader runs it)
        self._last_read = float("-inf")

    def entries(self) -> list[Entry]:
        with self._lock:
            return list(self._entries.values())

    def answer(self) -> dict[str, Any]:
        """The summary; a standby (no pass for `STALE_SECONDS`) first reads what the leader stored.
        `persisted`: every command counted is in the ConfigMap (as last read or written)."""
        now = self._clock.now()
        if now - self._last_pass > STALE_SECONDS and now - self._last_read > STALE_SECONDS:
            self._last_read = now
            try:
                self._read()
            except KubeError as err:
                log.debug("reading savings from configmap %s/%s: %s", self.namespace, self.configmap, err)
        with self._lock:
            entries = list(self._entries.values())
            persisted = self._loaded and self._entries.keys() <= self._stored
        return {**summary(entries, self._clock.now()), "persisted": persisted,
                "configMap": f"{self.namespace}/{self.configmap}"}  # fmt: skip

    def _read(self) -> None:
        try:
            obj = self._kube.get(CONFIGMAPS, self.configmap, self.namespace)
        except NotFoundError:
            self._version = ""
            with self._lock:
                self._stored = frozenset()
            self._loaded = True
            return
        meta = obj.get("metadata") or {}
        self._version = str(meta.get("resourceVersion") or "")
        self._meta = {k: meta[k] for k in ("labels", "annotations") if isinstance(meta.get(k), dict)}
        try:
            stored = json.loads(((obj.get("data") or {}).get(DATA_KEY)) or "[]")
        except ValueError:
            log.warning("configmap %s/%s: %s is not JSON, starting over", self.namespace, self.configmap, DATA_KEY)
            stored = []
        found = [e for e in (Entry.from_json(x) for x in stored if isinstance(x, Mapping)) if e is not None]
        with self._lock:
            self._entries.update({e.key: e for e in found})
            self._stored = frozenset(e.key for e in found)
            self._dirty = self._dirty or self._entries.keys() != self._stored
        self._loaded = True

    def reconcile(self) -> None:
        """Load the ConfigMap when starting to lead (again after a conflict, or after another replica
        led meanwhile), add the new commands, write if changed."""
        now = self._clock.now()
        resumed = now - self._last_pass > STALE_SECONDS  # first pass, or leading again after a gap
        self._last_pass = now
        if not self._loaded or resumed:
            self._read()
        fresh, failures = carried_out(self._decisions.recent(1000))
        with self._lock:
            before = dict(self._entries)
            self._entries.update({e.key: e for e in fresh})
            live = (e for e in self._entries.values() if e.time >= now - RETENTION_SECONDS and not _failed(e, failures))
            keep = sorted(live, key=lambda e: e.time)[-MAX_ENTRIES:]
            self._entries = {e.key: e for e in keep}
            self._dirty = self._dirty or self._entries != before
            body = json.dumps([e.to_json() for e in keep])
            written = frozenset(self._entries)
        if self._dirty or not self._version:
            self._write(body, written)

    def _write(self, body: str, written: frozenset[tuple[float, tuple[str, ...]]]) -> None:
        obj: dict[str, Any] = {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"labels": {"app.kubernetes.io/part-of": "karpy"}, **self._meta,
                         "name": self.configmap, "namespace": self.namespace},
            "data": {DATA_KEY: body},
        }  # fmt: skip
        try:
            if self._version:
                obj["metadata"]["resourceVersion"] = self._version
                done = self._kube.replace(CONFIGMAPS, self.configmap, obj, self.namespace)
            else:
                done = self._kube.create(CONFIGMAPS, obj, self.namespace)
        except ConflictError:  # another writer (or a create race): re-read, merge, write next pass
            self._loaded, self._dirty = False, True
            return
        except KubeError as err:
            log.warning("writing savings to configmap %s/%s: %s", self.namespace, self.configmap, err)
            return
        meta = done.get("metadata") or {}
        self._version = str(meta.get("resourceVersion") or "")
        self._meta = {k: meta[k] for k in ("labels", "annotations") if isinstance(meta.get(k), dict)}
        with self._lock:
            self._stored = written
            self._dirty = False
