"""The cloud batcher: windows (pure), buckets, per-caller results and errors, its metrics."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
from prometheus_client import REGISTRY

from controller.cloudprovider.batcher import CREATE_FLEET_WINDOW, DESCRIBE_INSTANCES_WINDOW, Batcher, Window
from controller.cloudprovider.errors import CloudProviderError
from tests.support.poll import until

WINDOW_CASES = {
    # name: (window, opened, last, count, now, seconds left)
    "just opened: the idle time": (Window(0.1, 1.0, 10), 0.0, 0.0, 1, 0.0, 0.1),
    "a new item restarts the idle time": (Window(0.1, 1.0, 10), 0.0, 0.5, 2, 0.55, 0.05),
    "idle time passed": (Window(0.1, 1.0, 10), 0.0, 0.5, 2, 0.6, 0.0),
    "max wait caps a busy window": (Window(0.1, 1.0, 10), 0.0, 0.95, 9, 0.96, 0.04),
    "max wait passed": (Window(0.1, 1.0, 10), 0.0, 1.2, 9, 1.2, 0.0),
    "full": (Window(0.1, 1.0, 10), 0.0, 0.0, 10, 0.0, 0.0),
}


@pytest.mark.parametrize("case", WINDOW_CASES.values(), ids=WINDOW_CASES.keys())
def test_window(case: tuple[Window, float, float, int, float, float]) -> None:
    window, opened, last, count, now, left = case
    assert window.left(opened, last, count, now) == pytest.approx(left)


def test_karpenters_windows() -> None:
    assert Window(0.035, 1.0, 1000) == CREATE_FLEET_WINDOW
    assert Window(0.1, 1.0, 500) == DESCRIBE_INSTANCES_WINDOW


class Recorder:
    """An executor that records each batch and answers item × 10, failing items named in `fail`."""

    def __init__(self, fail: Sequence[int] = ()) -> None:
        self.batches: list[list[int]] = []
        self.fail = set(fail)
        self.lock = threading.Lock()

    def __call__(self, items: Sequence[int]) -> list[int | Exception]:
        with self.lock:
            self.batches.append(list(items))
        return [CloudProviderError(f"item {i} refused") if i in self.fail else i * 10 for i in items]


def submit_all(batcher: Batcher[int, int], items: Sequence[int]) -> list[Future[int]]:
    pool = ThreadPoolExecutor(len(items))
    futures = [pool.submit(batcher.submit, i) for i in items]
    pool.shutdown(wait=False)
    return futures


def never_idle(items: int) -> Window:
    """A window only the item count closes (no machine is too slow for it)."""
    return Window(idle=30.0, max_wait=60.0, max_items=items)


def test_items_of_one_bucket_share_one_call_and_each_caller_gets_its_own_result() -> None:
    execute = Recorder()
    batcher: Batcher[int, int] = Batcher("test", never_idle(5), execute, key=lambda _: "one")
    futures = submit_all(batcher, [1, 2, 3, 4, 5])
    assert [f.result(timeout=10) for f in futures] == [10, 20, 30, 40, 50]
    assert len(execute.batches) == 1 and sorted(execute.batches[0]) == [1, 2, 3, 4, 5]


def test_buckets_are_separate_calls() -> None:
    execute = Recorder()
    batcher: Batcher[int, int] = Batcher("test", never_idle(3), execute, key=lambda i: i % 2)
    futures = submit_all(batcher, [1, 2, 3, 4, 5, 6])
    assert [f.result(timeout=10) for f in futures] == [10, 20, 30, 40, 50, 60]
    assert sorted(sorted(b) for b in execute.batches) == [[1, 3, 5], [2, 4, 6]]


def test_a_full_batch_closes_and_the_next_item_opens_another() -> None:
    execute = Recorder()
    batcher: Batcher[int, int] = Batcher("test", never_idle(2), execute, key=lambda _: "one")
    futures = submit_all(batcher, [1, 2, 3, 4])
    assert [f.result(timeout=10) for f in futures] == [10, 20, 30, 40]
    assert sorted(len(b) for b in execute.batches) == [2, 2]


def test_an_idle_window_closes_by_itself() -> None:
    execute = Recorder()
    batcher: Batcher[int, int] = Batcher("test", Window(0.01, 1.0, 100), execute, key=lambda _: "one")
    (future,) = submit_all(batcher, [7])
    until(future.done, timeout=10, what="the lone item's batch ran", interval=0.01)
    assert future.result() == 70 and execute.batches == [[7]]


def test_an_error_for_one_item_is_only_its_callers() -> None:
    batcher: Batcher[int, int] = Batcher("test", never_idle(3), Recorder(fail=[2]), key=lambda _: "one")
    futures = submit_all(batcher, [1, 2, 3])
    assert futures[0].result(timeout=10) == 10 and futures[2].result(timeout=10) == 30
    with pytest.raises(CloudProviderError, match="item 2 refused"):
        futures[1].result(timeout=10)


def test_a_failed_call_is_every_callers_error() -> None:
    def execute(items: Sequence[int]) -> list[int | Exception]:
        raise CloudProviderError("RequestLimitExceeded")

    batcher: Batcher[int, int] = Batcher("test", never_idle(3), execute, key=lambda _: "one")
    for future in submit_all(batcher, [1, 2, 3]):
        with pytest.raises(CloudProviderError, match="RequestLimitExceeded"):
            future.result(timeout=10)


def test_an_answer_short_of_items_fails_the_rest_never_hangs() -> None:
    batcher: Batcher[int, int] = Batcher("test", never_idle(3), lambda items: [1], key=lambda _: "one")
    futures = submit_all(batcher, [1, 2, 3])
    outcomes = []
    for future in futures:
        try:
            outcomes.append(str(future.result(timeout=10)))
        except CloudProviderError as err:
            outcomes.append(str(err))
    assert sorted(outcomes) == ["1", *["test: the batched call gave no answer for this request"] * 2]


def test_each_batch_is_observed_with_karpenters_histograms() -> None:
    def sample(name: str) -> float:
        return REGISTRY.get_sample_value(name, {"batcher": "metered"}) or 0.0

    sizes = sample("karpenter_cloudprovider_batcher_batch_size_sum")
    batches = sample("karpenter_cloudprovider_batcher_batch_size_count")
    windows = sample("karpenter_cloudprovider_batcher_batch_time_seconds_count")
    batcher: Batcher[int, int] = Batcher("metered", never_idle(4), Recorder(), key=lambda _: "one")
    for future in submit_all(batcher, [1, 2, 3, 4]):
        future.result(timeout=10)
    assert sample("karpenter_cloudprovider_batcher_batch_size_sum") - sizes == 4
    assert sample("karpenter_cloudprovider_batcher_batch_size_count") - batches == 1
    assert sample("karpenter_cloudprovider_batcher_batch_time_seconds_count") - windows == 1
