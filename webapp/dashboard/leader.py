"""Which controller replica to ask: the leader, found through its Lease.

The chart runs two controller replicas behind one Service; only the leader acts, so only its
decision log is the cluster's. With `--controller-lease NAMESPACE/NAME` the dashboard reads the
Lease's holder (the controller's identity is its pod name in the chart), that pod's IP, and asks
`http://<pod IP>:<port of --controller-url>` — read-only calls (get on one Lease and pods). When
any of that is missing (no holder yet, pod not found, no IP) it asks `--controller-url`, the
Service, as before. The answer is kept `cache_seconds`.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any, Protocol

from controller.core.labels import is_dns1123_subdomain
from controller.kube.client import Obj
from controller.kube.errors import KubeError
from controller.kube.resources import LEASES, PODS, Kind
from webapp.settings import parse_lease

log = logging.getLogger(__name__)


class Gets(Protocol):
    """All the locator reads: one object by name (`reader.ReadOnlyKube` is one)."""

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Obj: ...


def leader_url(kube: Gets, namespace: str, lease: str, fallback: str) -> str:
    """The leader's base URL, or `fallback` when it cannot be told (see the module doc)."""
    try:
        holder = str(((kube.get(LEASES, lease, namespace) or {}).get("spec") or {}).get("holderIdentity") or "")
        if not holder or not is_dns1123_subdomain(holder):  # a pod's name, or not a pod of ours
            return fallback
        pod: dict[str, Any] = dict(kube.get(PODS, holder, namespace) or {})
    except (KubeError, OSError, ValueError) as err:
        log.debug("locating the controller leader: %s", err)
        return fallback
    ip = str((pod.get("status") or {}).get("podIP") or "")
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return fallback
    parsed = urllib.parse.urlsplit(fallback)
    host = f"[{address}]" if address.version == 6 else str(address)
    netloc = f"{host}:{parsed.port}" if parsed.port else host
    return urllib.parse.urlunsplit((parsed.scheme, netloc, parsed.path, "", ""))


class LeaderLocator:
    """`leader_url` cached for `cache_seconds` (a callable for `ControllerAPI`)."""

    def __init__(
        self,
        kube: Gets,
        lease: str,
        fallback: str,
        now: Callable[[], float],
        cache_seconds: float = 5.0,
    ) -> None:
        self.namespace, self.name = parse_lease(lease)
        self._kube, self._fallback, self._now, self._cache_seconds = kube, fallback, now, cache_seconds
        self._lock = threading.Lock()
        self._cached: tuple[float, str] | None = None

    def __call__(self) -> str:
        with self._lock:
            if self._cached is not None and self._now() - self._cached[0] < self._cache_seconds:
                return self._cached[1]
        url = leader_url(self._kube, self.namespace, self.name, self._fallback)
        with self._lock:
            self._cached = (self._now(), url)
        return url

    def forget(self) -> None:
        """Drop the cached answer (the replica it named did not answer)."""
        with self._lock:
            self._cached = None
