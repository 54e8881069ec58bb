"""`Batcher`: the provisioning window (spec §5.1), polled with an injected clock.

The first trigger opens a window; each further trigger extends it; it closes when no trigger
came for `idle` seconds (1 s) or `max_duration` (10 s) passed since it opened. The provisioning
job polls `ready()` on every tick, so no thread ever blocks on the window.

A trigger may carry the moment its pod became provisionable (`at`, not later than now): pods
that arrived while the previous pass was still launching and binding open the window — for its
maximum — when they arrived, not when the job next looked (idle still counts from the
sighting). karpy decision: Karpenter's batcher starts its window only once the previous pass
has returned, so every long pass also delayed the next batch by its own length.
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

    def trigger(self, at: float | None = None) -> None:
        now = self._clock.now()
        when = now if at is None else min(at, now)
        self._opened = when if self._opened is None else min(self._opened, when)
        self._last = now  # idle counts from when a pod was seen (arrival times have 1 s precision)

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
