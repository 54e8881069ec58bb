"""How much consolidation and right-sizing have saved, kept in the cluster: the dashboard's savings.

`SavingsLedger` is a controller (job `savings`, the leader's only): every pass it takes the
deprovisioning commands the decision log says were carried out (`deprovisioning/decisionlog.py`:
hourly prices before and after, the candidate Nodes and the replacement Nodes launched) and keeps
them in a ConfigMap (`--savings-configmap`, in the leader-election namespace; created when missing,
updated with its resourceVersion, a conflict re-read on the next pass), so they survive a restart
and a leader change — a replica that starts leading (first, or again after another led) reads the
ConfigMap first, and a leader shutting down stores what it owes before it lets the Lease go
(`main.run`).

A command's saving counts only once it took effect, as the executor defines success
(`deprovisioning/controller.py`): every candidate Node gone and, for a replace, every replacement
Node seen initialized. Until then its entry is `pending` (`ready` once its replacements were seen
initialized), stored with its candidate and replacement names, and each pass settles it from the
cluster (`settle`, pure; a GET per Node named, only while something is pending): a candidate still
there and no longer being deprovisioned — neither deleting nor carrying karpy's deprovisioning
cordon (`deprovisioning/cordon.py`): the command failed, or a new leader abandoned it and lifted the
cordon — drops it (`dropped`, kept as a tombstone so the decision log never adds it again); so does
a failure the decision log records after it, and a later command over one of its candidates (a
node removed once is saved once). As the state is in the ConfigMap, a new leader settles the
entries the old one left pending by looking at the cluster. Entries stored before this (no status)
count as they did.

The answer says `persisted: true` only when the ConfigMap holds every command it knows as it knows
it (a command counted, or settled, in a pass is not stored until that pass's write succeeds; a
leader killed before then loses it). Entries older than `RETENTION_SECONDS` are dropped, at most
`MAX_ENTRIES` kept.

`summary(entries, now)` is pure: over the commands counted, the hourly rate saved (Σ before −
after) and the dollars saved over the last day and week (each command saves its rate from when it
took effect); how many are pending and dropped. Neighbours: `service.py` (`opportunity`: what
blocked nodes would save), `httpserver.py` serves both at `GET /api/v1/savings`.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from controller.clock import Clock
from controller.core.labels import DEPROVISIONING_CORDON, INITIALIZED
from controller.core.timestamps import format_timestamp
from controller.decisions import DEPROVISIONING_FAILED, DecisionLog
from controller.kube.client import Kube
from controller.kube.errors import ConflictError, KubeError, NotFoundError
from controller.kube.resources import CONFIGMAPS, NODES

log = logging.getLogger(__name__)

DAY, WEEK = 86_400.0, 7 * 86_400.0
RETENTION_SECONDS = WEEK + DAY
MAX_ENTRIES = 2_000
DATA_KEY = "savings.json"
STALE_SECONDS = 15.0  # a replica whose job has not run for this long (a standby) reads the ConfigMap to answer
CONTROLLER = "deprovisioning"

PENDING = "pending"  # carried out, not taken effect yet
READY = "ready"  # a replace whose replacements were seen initialized; its candidates not gone yet
COUNTED = "counted"  # took effect: its saving counts
DROPPED = "dropped"  # failed or abandoned: never counts
STATUSES = (PENDING, READY, DROPPED, COUNTED)  # in the order a merge prefers the later


@dataclass(frozen=True, slots=True)
class Entry:
    """One command carried out: when, what, its candidate and replacement Nodes, the hourly prices
    before and after, whether it took effect, and when it was settled."""

    time: float
    action: str
    nodes: tuple[str, ...]
    before: float
    after: float
    replacements: tuple[str, ...] = ()
    status: str = COUNTED
    settled: float | None = None  # when it took effect (or was dropped)

    @property
    def key(self) -> tuple[float, tuple[str, ...]]:
        return self.time, self.nodes

    @property
    def rate(self) -> float:
        return self.before - self.after

    @property
    def counted(self) -> bool:
        return self.status == COUNTED

    @property
    def open(self) -> bool:
        """Not settled yet: the cluster decides whether it counts."""
        return self.status in (PENDING, READY)

    @property
    def effective(self) -> float:
        """From when it saves: when it took effect (an entry stored before that was known: when it ran)."""
        return self.settled if self.settled is not None else self.time

    def to_json(self) -> dict[str, Any]:
        return {"time": self.time, "action": self.action, "nodes": list(self.nodes), "before": self.before,
                "after": self.after, "replacements": list(self.replacements), "status": self.status,
                "settled": self.settled}  # fmt: skip

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> Entry | None:
        """An entry as stored; one stored before commands were settled (no status) counts."""
        try:
            status = str(obj.get("status") or COUNTED)
            settled = obj.get("settled")
            if status not in STATUSES or isinstance(obj["nodes"], str):
                return None
            return Entry(float(obj["time"]), str(obj["action"]), tuple(str(n) for n in obj["nodes"]),
                         float(obj["before"]), float(obj["after"]),
                         tuple(str(n) for n in obj.get("replacements") or ()), status,
                         float(settled) if settled is not None else None)  # fmt: skip
        except (KeyError, TypeError, ValueError):
            return None


def summary(entries: Sequence[Entry], now: float) -> dict[str, Any]:
    """Over the commands counted: the hourly rate saved and the dollars saved over the last day and
    week; how many commands are pending and dropped (pure)."""
    counted = [e for e in entries if e.counted]

    def dollars(window: float) -> float:
        return sum(e.rate * max(0.0, now - max(e.effective, now - window)) / 3600.0 for e in counted)

    return {
        "savingPerHour": round(sum(e.rate for e in counted), 6),
        "lastDay": round(dollars(DAY), 4),
        "lastWeek": round(dollars(WEEK), 4),
        "commands": len(counted),
        "pending": sum(1 for e in entries if e.open),
        "dropped": sum(1 for e in entries if e.status == DROPPED),
        "since": format_timestamp(min(e.time for e in counted)) if counted else "",
        "recent": [
            {
                **e.to_json(),
                "time": format_timestamp(e.time),
                "settled": format_timestamp(e.effective),
                "savingPerHour": round(e.rate, 6),
            }
            for e in sorted(counted, key=lambda e: -e.time)[:20]
        ],
    }


def carried_out(decisions: Iterable[Any]) -> tuple[list[Entry], list[tuple[float, tuple[str, ...]]]]:
    """The deprovisioning commands carried out (pending), and the failures (time, nodes) recorded after them."""
    entries, failures = [], []
    for d in decisions:
        if d.controller != CONTROLLER:
            continue
        extra = d.extra or {}
        nodes = tuple(str(n) for n in extra.get("nodes", ()))
        if d.action == DEPROVISIONING_FAILED:
            failures.append((d.time, nodes))
        elif d.price_before is not None and d.price_after is not None:
            replacements = tuple(str(n) for n in extra.get("replacementNodes", ()))
            entries.append(Entry(d.time, d.action, nodes, float(d.price_before), float(d.price_after),
                                 replacements, PENDING))  # fmt: skip
    return entries, failures


@dataclass(frozen=True, slots=True)
class Seen:
    """A Node as the ledger found it."""

    deprovisioning: bool  # being deleted, or cordoned by a deprovisioning command
    initialized: bool

    @staticmethod
    def of(node: Mapping[str, Any]) -> Seen:
        meta = node.get("metadata") or {}
        marked = DEPROVISIONING_CORDON in (meta.get("annotations") or {})
        initialized = (meta.get("labels") or {}).get(INITIALIZED) == "true"
        return Seen(bool(meta.get("deletionTimestamp")) or marked, initialized)


def settle(entry: Entry, nodes: Mapping[str, Seen], now: float) -> Entry:
    """An open entry's fate from the cluster (`nodes`: the Nodes it names that exist). Pure.

    A candidate still there and not being deprovisioned: dropped (the command failed or was
    abandoned). Every candidate gone and the replacements ready (seen initialized, now or by an
    earlier pass): counted. Gone, a replacement still there but not initialized: open. Gone and
    the replacements gone without ever being seen ready: dropped (they never came)."""
    if not entry.open:
        return entry
    present = [nodes[n] for n in entry.nodes if n in nodes]
    if any(not s.deprovisioning for s in present):
        return replace(entry, status=DROPPED, settled=now)
    ready = entry.status == READY or all(r in nodes and nodes[r].initialized for r in entry.replacements)
    if present:
        return replace(entry, status=READY) if ready and entry.replacements and entry.status == PENDING else entry
    if ready:
        return replace(entry, status=COUNTED, settled=now)
    if any(r in nodes for r in entry.replacements):
        return entry
    return replace(entry, status=DROPPED, settled=now)


def superseded(entry: Entry, others: Iterable[Entry]) -> bool:
    """An open entry a later command over one of its candidates replaces (a node removed once is saved once)."""
    return entry.open and any(
        o.time > entry.time and o.status != DROPPED and not set(o.nodes).isdisjoint(entry.nodes) for o in others
    )


def _failed(entry: Entry, failures: Iterable[tuple[float, tuple[str, ...]]]) -> bool:
    return entry.open and any(nodes == entry.nodes and when >= entry.time for when, nodes in failures)


def _later(ours: Entry | None, theirs: Entry) -> Entry:
    """Of two versions of one entry, the more settled (theirs on a tie)."""
    if ours is None or STATUSES.index(theirs.status) >= STATUSES.index(ours.status):
        return theirs
    return ours


Key = tuple[float, tuple[str, ...]]


class SavingsLedger:
    name = "savings"

    def __init__(self, kube: Kube, decisions: DecisionLog, clock: Clock, namespace: str, configmap: str) -> None:
        self._kube, self._decisions, self._clock = kube, decisions, clock
        self.namespace, self.configmap = namespace, configmap
        self._lock = threading.Lock()
        self._entries: dict[Key, Entry] = {}
        self._loaded = False
        self._dirty = False  # a write is owed (a change not stored yet, e.g. after a conflict)
        self._stored: frozenset[Entry] = frozenset()  # the entries the ConfigMap holds, as it holds them
        self._version = ""
        self._meta: dict[str, Any] = {}  # labels and annotations as read (Helm's stay on the object)
        self._last_pass = float("-inf")  # when reconcile() last ran (only the leader runs it)
        self._last_read = float("-inf")

    def entries(self) -> list[Entry]:
        with self._lock:
            return list(self._entries.values())

    def answer(self) -> dict[str, Any]:
        """The summary; a standby (no pass for `STALE_SECONDS`) first reads what the leader stored.
        `persisted`: the ConfigMap (as last read or written) holds every command as counted or settled here."""
        now = self._clock.now()
        if now - self._last_pass > STALE_SECONDS and now - self._last_read > STALE_SECONDS:
            self._last_read = now
            try:
                self._read()
            except KubeError as err:
                log.debug("reading savings from configmap %s/%s: %s", self.namespace, self.configmap, err)
        with self._lock:
            entries = list(self._entries.values())
            persisted = self._loaded and set(entries) <= self._stored
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
        if not isinstance(stored, list):
            stored = []
        found = [e for e in (Entry.from_json(x) for x in stored if isinstance(x, Mapping)) if e is not None]
        with self._lock:
            for e in found:
                self._entries[e.key] = _later(self._entries.get(e.key), e)
            self._stored = frozenset(found)
            self._dirty = self._dirty or not set(self._entries.values()) <= self._stored
        self._loaded = True

    def reconcile(self) -> None:
        """Load the ConfigMap when starting to lead (again after a conflict, or after another replica
        led meanwhile), add the new commands, settle the open ones, write if changed."""
        now = self._clock.now()
        resumed = now - self._last_pass > STALE_SECONDS  # first pass, or leading again after a gap
        self._last_pass = now
        if not self._loaded or resumed:
            self._read()
        fresh, failures = carried_out(self._decisions.recent(1000))
        with self._lock:
            before = dict(self._entries)
            for e in fresh:
                self._entries.setdefault(e.key, e)  # a command known already keeps what was settled
            entries = list(self._entries.values())
        settled = self._settle(entries, failures, now)
        with self._lock:
            for e in settled:
                self._entries[e.key] = _later(self._entries.get(e.key), e)
            live = (e for e in self._entries.values() if e.time >= now - RETENTION_SECONDS)
            keep = sorted(live, key=lambda e: e.time)[-MAX_ENTRIES:]
            self._entries = {e.key: e for e in keep}
            self._dirty = self._dirty or self._entries != before
            body = json.dumps([e.to_json() for e in keep])
            written = frozenset(keep)
        if self._dirty or not self._version:
            self._write(body, written)

    def _settle(
        self, entries: list[Entry], failures: Sequence[tuple[float, tuple[str, ...]]], now: float
    ) -> list[Entry]:
        """The open entries that changed: failed or superseded ones dropped, the rest settled from
        the Nodes they name (left open this pass when the Nodes cannot be read)."""
        out, rest = [], []
        for e in entries:
            if not e.open:
                continue
            if _failed(e, failures) or superseded(e, entries):
                out.append(replace(e, status=DROPPED, settled=now))
            else:
                rest.append(e)
        if not rest:
            return out
        nodes = self._nodes({n for e in rest for n in (*e.nodes, *e.replacements)})
        if nodes is None:
            return out
        return out + [s for e in rest if (s := settle(e, nodes, now)) != e]

    def _nodes(self, names: Iterable[str]) -> dict[str, Seen] | None:
        """The named Nodes that exist, read from the API server (not a cache: a command recorded
        after its cordon is seen cordoned)."""
        found = {}
        for name in sorted(names):
            try:
                found[name] = Seen.of(self._kube.get(NODES, name))
            except NotFoundError:
                continue
            except KubeError as err:
                log.debug("savings: reading node %s: %s", name, err)
                return None
        return found

    def _write(self, body: str, written: frozenset[Entry]) -> None:
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
