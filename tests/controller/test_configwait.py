"""The controller while its configuration cannot work: says why, at a low rate, and waits for a fix or SIGTERM."""

from __future__ import annotations

import logging

import pytest

from controller.clock import FakeClock
from controller.configwait import ConfigWait


class Pauses:
    """An injected pause: advances the clock by what is asked; says "stopping" after `stop_after` calls."""

    def __init__(self, clock: FakeClock, stop_after: int) -> None:
        self.clock, self.stop_after, self.calls = clock, stop_after, 0

    def __call__(self, seconds: float) -> bool:
        self.calls += 1
        self.clock.step(seconds)
        return self.calls > self.stop_after


def test_a_settings_problem_is_rechecked_until_it_is_gone(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    start = clock.now()
    answers = iter(["no cluster name", "no cluster name", "configmap invalid", ""])
    asked: list[float] = []

    def check() -> str:
        asked.append(clock.now() - start)
        return next(answers)

    waiting = ConfigWait(clock, poll_seconds=2.0)
    with caplog.at_level(logging.INFO, logger="controller.configwait"):
        waiting.failed("no cluster name", check)
        assert waiting.unavailable() == "not configured: no cluster name"
        assert waiting.status()["notReady"] == "not configured: no cluster name"
        assert waiting.wait(Pauses(clock, stop_after=100)) is True
    assert asked == [2.0, 4.0, 6.0, 8.0]  # one check per poll, none before the first pause
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == [  # once, then only when it changes
        "not configured, not acting (re-reading the settings until they work): no cluster name",
        "not configured, not acting (re-reading the settings until they work): configmap invalid",
    ]
    assert "the configuration works now (was: configmap invalid); starting" in caplog.messages


def test_an_unchanged_problem_is_logged_again_only_every_log_every_seconds(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    waiting = ConfigWait(clock, poll_seconds=10.0, log_every=300.0)
    with caplog.at_level(logging.ERROR, logger="controller.configwait"):
        waiting.failed("aws-region: required", None)
        pauses = Pauses(clock, stop_after=95)  # 950 s
        assert waiting.wait(pauses) is False
    assert pauses.calls == 96
    assert [r.getMessage() for r in caplog.records] == [
        "not configured, not acting (fix the flag or variable and restart): aws-region: required",
        "still not configured: aws-region: required",  # at 300 s
        "still not configured: aws-region: required",  # 600 s
        "still not configured: aws-region: required",  # 900 s
    ]


def test_a_flag_problem_waits_until_the_process_stops() -> None:
    clock = FakeClock()
    waiting = ConfigWait(clock)
    waiting.failed("simulated-catalog: /nope: No such file", None)
    assert waiting.wait(lambda seconds: True) is False  # SIGTERM: returns at once
    pauses = Pauses(clock, stop_after=5)
    assert waiting.wait(pauses) is False and pauses.calls == 6
    assert waiting.problem == "simulated-catalog: /nope: No such file"
