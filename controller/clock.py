"""The injected clock: every batch window, TTL, backoff and grace period reads one.

`Clock` is the protocol (`now()` in epoch seconds, `monotonic()` for intervals); `SystemClock`
is the real one; `FakeClock` is for tests (`step(seconds)`), so no test ever sleeps. Controllers
take a clock in their constructor and never call `time.time()` themselves.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Wall-clock time in seconds since the epoch (compared with Kubernetes timestamps)."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class FakeClock:
    """A clock that moves only when told to (thread-safe)."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def step(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds


def parse_timestamp(text: str | None) -> float | None:
    """A Kubernetes RFC 3339 timestamp (`2024-01-02T03:04:05Z`) in epoch seconds, or None."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def format_timestamp(seconds: float) -> str:
    """Epoch seconds as a Kubernetes timestamp (second precision, UTC)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_timestamp(seconds: float) -> str:
    """Epoch seconds as a Kubernetes MicroTime (used by Leases and events.k8s.io)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
