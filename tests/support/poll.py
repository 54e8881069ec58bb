"""The one poller of the tests: wait for a state, with a deadline, instead of sleeping.

`until(check, timeout, what)` calls `check` every `interval` seconds until it returns something
truthy and returns that; an exception listed in `ignore` (by default a Kubernetes API error or
a refused connection: the cluster or a process still starting) counts as "not yet". At the
deadline the test fails, naming `what` and the last value or error seen. `settled(problems)` is
the same for a check that says what is still wrong; `within(check, timeout)` a wait that may
end either way (True or False, no failure).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from controller.kube.errors import KubeError

NOT_YET: tuple[type[BaseException], ...] = (KubeError, OSError)


def until(
    check: Callable[[], Any],
    timeout: float = 60.0,
    what: str = "condition",
    interval: float = 0.2,
    ignore: tuple[type[BaseException], ...] = NOT_YET,
) -> Any:
    """`check()`'s first truthy value within `timeout` seconds; else the test fails."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = check()
        except ignore as err:
            last = err
        else:
            if last:
                return last
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}; last value: {last!r}")
        time.sleep(interval)


def settled(
    problems: Callable[[], str], timeout: float = 60.0, what: str = "a settled state", interval: float = 0.2
) -> None:
    """`until` for a check that names what is still wrong ("" once nothing is); the failure says
    the last problem seen."""
    seen = [""]

    def clean() -> bool:
        seen[0] = problems()
        return not seen[0]

    try:
        until(clean, timeout, what, interval)
    except pytest.fail.Exception:
        pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}: {seen[0]}")


def within(check: Callable[[], Any], timeout: float, interval: float = 0.2) -> bool:
    """Whether `check` comes true within `timeout` (a wait that may end either way)."""
    try:
        until(check, timeout, "", interval)
    except pytest.fail.Exception:
        return False
    return True
