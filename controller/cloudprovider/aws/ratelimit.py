"""Client-side token buckets per AWS API action, so karpy paces itself under EC2's throttling.

EC2 throttles each account with a token bucket per API action (a bucket size and a refill rate;
"Request throttling for the Amazon EC2 API"). `LIMITS` are the defaults Karpenter's kwok EC2
simulation uses for the actions karpy calls — CreateFleet 5/s with a burst of 50,
RunInstances 2/s burst 5, TerminateInstances 5/s burst 100, every Describe* 20/s burst 100 — and
`RateLimiter.acquire(operation)` waits (injected clock and sleep) until the action's bucket has a
token, so a burst of launches or terminations is spread out instead of answered with
`RequestLimitExceeded`; `AWSApi` still backs off on throttling errors the account's other
clients cause. Actions without a bucket are not paced. Pure arithmetic plus the injected sleep.

`Buckets` is the other side, EC2's own: `take(operation, now)` spends a token or, when the
bucket is empty, answers how long until one refills (the caller refuses the call with
`RequestLimitExceeded`). The simulated provider uses it with the same `LIMITS`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

DESCRIBE = (20.0, 100.0)
LIMITS: Mapping[str, tuple[float, float]] = {
    "create_fleet": (5.0, 50.0),
    "run_instances": (2.0, 5.0),
    "terminate_instances": (5.0, 100.0),
}


@dataclass
class _Bucket:
    rate: float
    burst: float
    tokens: float
    at: float


def limit_of(
    operation: str, limits: Mapping[str, tuple[float, float]], describe: tuple[float, float] | None
) -> tuple[float, float] | None:
    """The (rate per second, burst) of `operation`'s bucket; None when it is not limited."""
    if operation in limits:
        return limits[operation]
    return describe if operation.startswith("describe_") else None


class Buckets:
    """EC2's side of request throttling: a call either takes a token or is refused. Pure: the
    caller passes the time."""

    def __init__(
        self, limits: Mapping[str, tuple[float, float]] = LIMITS, describe: tuple[float, float] | None = DESCRIBE
    ) -> None:
        self._limits, self._describe = dict(limits), describe
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def take(self, operation: str, now: float) -> float:
        """0.0 when `operation` took a token at `now`; else the seconds until one is there."""
        limit = limit_of(operation, self._limits, self._describe)
        if limit is None:
            return 0.0
        rate, burst = limit
        with self._lock:
            bucket = self._buckets.setdefault(operation, _Bucket(rate, burst, burst, now))
            bucket.tokens = min(bucket.burst, bucket.tokens + max(0.0, now - bucket.at) * bucket.rate)
            bucket.at = max(bucket.at, now)
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return 0.0
            return (1.0 - bucket.tokens) / bucket.rate


class RateLimiter:
    def __init__(
        self,
        now: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        limits: Mapping[str, tuple[float, float]] = LIMITS,
        describe: tuple[float, float] | None = DESCRIBE,
    ) -> None:
        self._now, self._sleep = now, sleep
        self._limits, self._describe = dict(limits), describe
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()
        self.waited = 0.0  # seconds spent waiting for tokens (for reports and tests)

    def _limit(self, operation: str) -> tuple[float, float] | None:
        return limit_of(operation, self._limits, self._describe)

    def acquire(self, operation: str) -> float:
        """Take a token for `operation`, waiting for one if the bucket is empty; the wait in seconds."""
        limit = self._limit(operation)
        if limit is None:
            return 0.0
        rate, burst = limit
        with self._lock:
            now = self._now()
            bucket = self._buckets.setdefault(operation, _Bucket(rate, burst, burst, now))
            bucket.tokens = min(bucket.burst, bucket.tokens + (now - bucket.at) * bucket.rate)
            bucket.at = now
            bucket.tokens -= 1.0  # reserved now; a negative balance is the queue ahead of us
            wait = max(0.0, -bucket.tokens / bucket.rate)
            self.waited += wait
        if wait > 0:
            self._sleep(wait)
        return wait
