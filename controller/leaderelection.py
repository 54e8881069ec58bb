"""Leader election on a `coordination.k8s.io/v1` Lease: only the leader's jobs act.

`decide(lease, identity, now, duration)` is the pure rule: no Lease → create it; ours → renew;
someone else's that was not renewed for `duration` seconds (or released) → take it over;
otherwise wait. `LeaderElector.step()` applies it (a 409 means another replica won the race);
`run(stop)` steps every `retry_seconds`. A leader that cannot renew for `duration` seconds stops
calling itself leader. `release()` (graceful shutdown) empties the holder so a standby takes over
at once. With the defaults (10 s lease, 1 s retry) a standby takes over within about 11 s of the
leader's death.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from controller.clock import Clock
from controller.core.timestamps import format_micro_timestamp, parse_timestamp
from controller.kube.client import Kube
from controller.kube.errors import ConflictError, KubeError, NotFoundError
from controller.kube.resources import LEASES

log = logging.getLogger(__name__)

CREATE, RENEW, ACQUIRE, WAIT = "create", "renew", "acquire", "wait"


def decide(lease: Mapping[str, Any] | None, identity: str, now: float, duration: float) -> str:
    if lease is None:
        return CREATE
    spec = lease.get("spec") or {}
    holder = spec.get("holderIdentity") or ""
    if holder == identity:
        return RENEW
    renewed = parse_timestamp(spec.get("renewTime")) or 0.0
    lease_seconds = float(spec.get("leaseDurationSeconds") or duration)
    if not holder or now - renewed > lease_seconds:
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
        self._renewed_at: float | None = None
        self._lock = threading.Lock()

    def is_leader(self) -> bool:
        with self._lock:
            return self._renewed_at is not None and self.clock.now() - self._renewed_at < self.duration

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
            action = decide(lease, self.identity, now, self.duration)
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
                    self._renewed_at = None
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
