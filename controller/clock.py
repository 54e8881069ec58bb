"""The injected clock: every batch window, TTL, backoff and grace period reads one.

`Clock` is the protocol (`now()` in epoch seconds, `monotonic()` for intervals); `SystemClock`
is the real one; `FakeClock` is for tests (`step(seconds)`), so no test ever sleeps. Controllers
take a clock in their constructor and never call `time.time()` themselves. Kubernetes
timestamps are read and written by `controller.core.timestamps`.
"""

from __future__ import annotations

import threading
import time
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
