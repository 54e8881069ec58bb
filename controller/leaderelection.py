"""Leader election on a `coordination.k8s.io/v1` Lease: only the leader's jobs act.

`decide(lease, identity, now, observed_at, duration)` is the pure rule: no Lease → create it;
ours → renew; someone else's that was released, or that this replica has watched stay unchanged
for `duration` seconds → take it over; otherwise wait. Clocks of replicas differ, so the age of
a lease is never read from its `renewTime` (written by another machine's clock): a replica
records, by its own clock, when it first saw the current holder/renewTime (`observed_at`), as
client-go does (issue 14, item 5).

`LeaderElector.step()` applies the rule (a 409 means another replica won the race); `run(stop)`
steps every `retry_seconds`. A leader counts itself leader only for `renew_deadline` seconds
after the start of its last successful renewal — `duration` minus a safety margin of
max(2 retries, 20 %) — so it stops before any standby can take over; when it sees another
holder it stops at once. `release()` (graceful shutdown) empties the holder so a standby takes
over at once. With the defaults (10 s lease, 1 s retry) a standby takes over within about 11 s
of the leader's death; the leader has stopped acting 3 s before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from controller.clock import Clock
from controller.core.timestamps import format_micro_timestamp
from controller.kube.client import Kube
from controller.kube.errors import ConflictError, KubeError, NotFoundError
from controller.kube.resources import LEASES

log = logging.getLogger(__name__)

CREATE, RENEW, ACQUIRE, WAIT = "create", "renew", "acquire", "wait"


def lease_record(lease: Mapping[str, Any] | None) -> tuple[str, str, str]:
    """What changes on every renewal: holder, renewTime, transitions (as text)."""
    spec = (lease or {}).get("spec") or {}
    return (
        str(spec.get("holderIdentity") or ""),
        str(spec.get("renewTime") or ""),
        str(spec.get("leaseTransitions") or ""),
    )


def decide(lease: Mapping[str, Any] | None, identity: str, now: float, observed_at: float, duration: float) -> str:
    """Pure. `observed_at`: when this replica (its own clock) first saw the lease's current record."""
    if lease is None:
        return CREATE
    spec = lease.get("spec") or {}
    holder = spec.get("holderIdentity") or ""
    if holder == identity:
        return RENEW
    try:
        lease_seconds = max(float(spec.get("leaseDurationSeconds") or duration), duration)
    except (TypeError, ValueError):
        lease_seconds = duration
    if not holder or now - observed_at > lease_seconds:
        return ACQUIRE
    return WAIT


class LeaderElector:
    def __init__(
        self,
        kube: Kube,
        clock: Clock,
        identity: str,
        namespace: str = "kube-system",
        name: str = "karpy-controller",
        duration: float = 10.0,
        retry_seconds: float = 1.0,
    ) -> None:
        self.kube, self.clock, self.identity = kube, clock, identity
        self.namespace, self.name = namespace, name
        self.duration, self.retry_seconds = duration, retry_seconds
        self.renew_deadline = duration - max(2 * retry_seconds, 0.2 * duration)
        if self.renew_deadline <= 0:
            raise ValueError(f"lease duration {duration}s leaves no time to act with a {retry_seconds}s retry")
        self._renewed_at: float | None = None
        self._observed: tuple[str, str, str] | None = None
        self._observed_at = 0.0
        self._lock = threading.Lock()

    def is_leader(self) -> bool:
        with self._lock:
            return self._renewed_at is not None and self.clock.now() - self._renewed_at < self.renew_deadline

    def _observe(self, lease: Mapping[str, Any] | None, now: float) -> float:
        record = lease_record(lease)
        if record != self._observed:
            self._observed, self._observed_at = record, now
        return self._observed_at

    def _lease_spec(self, now: float, acquired: bool, transitions: int) -> dict[str, Any]:
        ts = format_micro_timestamp(now)
        spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.duration),
            "renewTime": ts,
            "leaseTransitions": transitions,
        }
        if acquired:
            spec["acquireTime"] = ts
        return spec

    def step(self) -> bool:
        """One try to become or stay leader; True when this replica leads afterwards."""
        now = self.clock.now()
        try:
            try:
                lease: dict[str, Any] | None = self.kube.get(LEASES, self.name, self.namespace)
            except NotFoundError:
                lease = None
            action = decide(lease, self.identity, now, self._observe(lease, now), self.duration)
            if action == CREATE:
                body = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": self._lease_spec(now, True, 0),
                }
                self.kube.create(LEASES, body, self.namespace)
            elif action in (RENEW, ACQUIRE):
                assert lease is not None
                old = lease.get("spec") or {}
                transitions = int(old.get("leaseTransitions") or 0) + (1 if action == ACQUIRE else 0)
                spec = {**old, **self._lease_spec(now, action == ACQUIRE, transitions)}
                self.kube.replace(LEASES, self.name, {**lease, "spec": spec}, self.namespace)
            else:
                with self._lock:
                    was, self._renewed_at = self._renewed_at is not None, None
                if was:
                    log.warning("lost leadership", extra={"identity": self.identity})
                return False
        except ConflictError:
            return self.is_leader()
        except (KubeError, OSError) as err:
            log.warning("leader election: %s", err)
            return self.is_leader()
        with self._lock:
            was = self._renewed_at is not None
            self._renewed_at = now
        if not was:
            log.info("became leader", extra={"identity": self.identity})
        return True

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.step()
            stop.wait(self.retry_seconds)

    def release(self) -> None:
        """Give the Lease up (graceful shutdown) so a standby replica takes over at once."""
        with self._lock:
            leading, self._renewed_at = self._renewed_at is not None, None
        if not leading:
            return
        try:
            lease = self.kube.get(LEASES, self.name, self.namespace)
            spec = dict(lease.get("spec") or {})
            if spec.get("holderIdentity") == self.identity:
                spec["holderIdentity"] = ""
                self.kube.replace(LEASES, self.name, {**lease, "spec": spec}, self.namespace)
                log.info("released leadership")
        except (KubeError, OSError) as err:
            log.warning("releasing the lease: %s", err)
