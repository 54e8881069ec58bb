"""`Batcher`: the provisioning window (spec §5.1), polled with an injected clock.

The first trigger opens a window; each further trigger extends it; it closes when no trigger
came for `idle` seconds (1 s) or `max_duration` (10 s) passed since it opened. The provisioning
job polls `ready()` on every tick, so no thread ever blocks on the window.
"""

from __future__ import annotations

from controller.clock import Clock


class Batcher:
    def __init__(self, clock: Clock, idle: float = 1.0, max_duration: float = 10.0) -> None:
        self._clock = clock
        self.idle = idle
        self.max_duration = max_duration
        self._opened: float | None = None
        self._last: float = 0.0

    def trigger(self) -> None:
        now = self._clock.now()
        if self._opened is None:
            self._opened = now
        self._last = now

    @property
    def open(self) -> bool:
        return self._opened is not None

    def ready(self) -> bool:
        """True when a window is open and has closed (idle or max reached)."""
        if self._opened is None:
            return False
        now = self._clock.now()
        return now - self._last >= self.idle or now - self._opened >= self.max_duration

    def reset(self) -> None:
        self._opened = None
