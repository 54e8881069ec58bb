"""The provisioning window: opened by the first trigger, closed after 1 s idle or 10 s, and
measured from when pods arrived when the trigger says so."""

from __future__ import annotations

from controller.clock import FakeClock
from controller.provisioning.batcher import Batcher


def test_a_window_closes_after_idle_or_at_its_maximum() -> None:
    clock = FakeClock()
    batcher = Batcher(clock, idle=1.0, max_duration=10.0)
    assert not batcher.ready()
    batcher.trigger()
    clock.step(0.9)
    assert not batcher.ready()
    clock.step(0.1)
    assert batcher.ready()
    batcher.reset()
    batcher.trigger()
    for _ in range(19):  # a trigger every 0.5 s keeps it open until its maximum
        clock.step(0.5)
        assert not batcher.ready()
        batcher.trigger()
    clock.step(0.5)
    assert batcher.ready()


def test_pods_that_arrived_during_the_previous_pass_open_the_window_when_they_arrived() -> None:
    clock = FakeClock()
    batcher = Batcher(clock, idle=1.0, max_duration=10.0)
    clock.step(6.0)  # the previous pass ran for 6 s; the first of these pods arrived 4 s ago
    batcher.trigger(at=clock.now() - 4.0)
    batcher.trigger(at=clock.now() - 1.0)
    assert not batcher.ready()  # idle counts from the sighting
    for _ in range(11):  # arrivals continue every 0.5 s
        clock.step(0.5)
        batcher.trigger()
    assert not batcher.ready()
    clock.step(0.5)  # 10 s after the first of them arrived, not 10 s after it was seen
    assert batcher.ready()


def test_a_time_in_the_future_counts_as_now() -> None:
    clock = FakeClock()
    batcher = Batcher(clock, idle=1.0, max_duration=10.0)
    batcher.trigger(at=clock.now() + 30.0)  # another machine's clock ahead of ours
    for _ in range(19):
        clock.step(0.5)
        batcher.trigger()
        assert not batcher.ready()
    clock.step(0.5)
    assert batcher.ready()  # the window opened now


def test_while_more_pods_are_coming_idleness_does_not_close_the_window() -> None:
    clock = FakeClock()
    batcher = Batcher(clock, idle=1.0, max_duration=10.0)
    coming = [True]
    batcher.trigger()
    clock.step(5.0)
    assert not batcher.ready(lambda: coming[0])  # kube-scheduler still has pods to decide
    assert batcher.ready()  # without the question: idle
    coming[0] = False
    assert batcher.ready(lambda: coming[0])
    coming[0] = True
    clock.step(5.0)
    assert batcher.ready(lambda: coming[0])  # its maximum closes it whatever is coming
