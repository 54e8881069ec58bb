"""`Batcher`: like requests made at about the same time merged into one cloud call.

Karpenter's AWS provider batches CreateFleet, DescribeInstances and TerminateInstances
(`pkg/batcher`): a caller adds its request and blocks; requests that hash alike and arrive within
a window are executed together, and each caller gets its own share of the answer. karpy's shape
of the same idea, used by both providers (`aws/batching.py`, `simulated/provider.py`):

- `submit(item)` blocks until the item's batch has run, then returns the item's own result or
  raises its own error. Items are bucketed by `key(item)`; only items of one bucket share a call.
- A bucket's window (`Window`, pure) opens with its first item and closes `idle` seconds after the
  last item arrived, `max_wait` seconds after it opened, or at once when it holds `max_items`.
- The caller that opened a bucket waits for the window and runs the batch in its own thread
  (`execute(items)` → one `U | Exception` per item, in order), so different buckets run in
  parallel and no background thread has to be started or stopped. An `execute` that raises gives
  every caller of the batch that error; an answer short of items gives the rest a
  `CloudProviderError` (Karpenter's "error making call"), never a hang.

Windows are measured in real time (`now`, `time.monotonic` by default): they are about callers
running at the same moment, not about the controller's clock. Each batch is observed in
Karpenter's histograms `karpenter_cloudprovider_batcher_batch_size` and `_batch_time_seconds`
(label `batcher`, the batcher's name).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from controller.cloudprovider.errors import CloudProviderError
from controller.metrics import BATCHER_BATCH_SIZE, BATCHER_BATCH_TIME

T = TypeVar("T")
U = TypeVar("U")


@dataclass(frozen=True)
class Window:
    """When a batch closes: `idle` seconds without a new item, `max_wait` after it opened, or
    `max_items` items (Karpenter: CreateFleet 35 ms / 1 s / 1,000, the others 100 ms / 1 s / 500)."""

    idle: float
    max_wait: float
    max_items: int

    def left(self, opened: float, last: float, count: int, now: float) -> float:
        """Seconds until a batch opened at `opened`, last added to at `last`, holding `count`
        items closes, as seen at `now` (0.0: closed). Pure."""
        if count >= self.max_items:
            return 0.0
        return max(0.0, min(last + self.idle, opened + self.max_wait) - now)


CREATE_FLEET_WINDOW = Window(0.035, 1.0, 1000)
DESCRIBE_INSTANCES_WINDOW = Window(0.1, 1.0, 500)
TERMINATE_INSTANCES_WINDOW = Window(0.1, 1.0, 500)


@dataclass
class _Batch(Generic[T, U]):
    opened: float
    last: float
    items: list[T] = field(default_factory=list)
    closed_at: float | None = None
    results: list[U | Exception] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)


class Batcher(Generic[T, U]):
    def __init__(
        self,
        name: str,
        window: Window,
        execute: Callable[[Sequence[T]], Sequence[U | Exception]],
        key: Callable[[T], Hashable],
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name, self.window = name, window
        self._execute, self._key, self._now = execute, key, now
        self._open: dict[Hashable, _Batch[T, U]] = {}
        self._cond = threading.Condition()

    def submit(self, item: T) -> U:
        bucket = self._key(item)
        with self._cond:
            now = self._now()
            batch = self._open.get(bucket)
            leader = batch is None
            if batch is None:
                batch = self._open[bucket] = _Batch(now, now)
            index = len(batch.items)
            batch.items.append(item)
            batch.last = now
            if len(batch.items) >= self.window.max_items:
                self._close(bucket, batch, now)
            self._cond.notify_all()
            while leader and batch.closed_at is None:
                now = self._now()
                left = self.window.left(batch.opened, batch.last, len(batch.items), now)
                if left <= 0:
                    self._close(bucket, batch, now)
                else:
                    self._cond.wait(left)
        if leader:
            self._run(batch)
        batch.done.wait()
        result = batch.results[index]
        if isinstance(result, Exception):
            raise result
        return result

    def _close(self, bucket: Hashable, batch: _Batch[T, U], now: float) -> None:
        if self._open.get(bucket) is batch:
            del self._open[bucket]
        batch.closed_at = now

    def _run(self, batch: _Batch[T, U]) -> None:
        items = list(batch.items)
        BATCHER_BATCH_SIZE.labels(batcher=self.name).observe(len(items))
        BATCHER_BATCH_TIME.labels(batcher=self.name).observe((batch.closed_at or batch.opened) - batch.opened)
        results: list[U | Exception] = []
        try:
            results = list(self._execute(items))
        except Exception as err:
            results = [err] * len(items)
        finally:
            missing = CloudProviderError(f"{self.name}: the batched call gave no answer for this request")
            batch.results = (results + [missing] * len(items))[: len(items)]
            batch.done.set()
