"""`ConfigWait`: the controller process while its configuration cannot work — up, saying why, acting on nothing.

`main.run` enters it when `main.build` raises `ConfigError` instead of exiting (a deployed
controller that exits restarts into the same error: a CrashLoopBackOff). Meanwhile the HTTP server
answers `/healthz` 200 (the process is fine; a restart would not help), `/readyz` 503 and every
`/api/` path 503 with `not configured: <the problem>` (`status`, `unavailable`); no informer, job,
Lease or cloud call runs. The problem is logged at error level once, again whenever it changes,
and every `LOG_EVERY` seconds while it lasts.

A problem the karpenter-global-settings ConfigMap can fix (the cluster name, any of its keys) comes
with a `check`: every `poll_seconds` `wait` asks it (`main.settings_check`: the ConfigMap read by a
`SettingsWatch` that applies nothing) and returns True once it finds none, and `run` builds the
controller — no restart. A problem only a flag or the environment can fix (a region, a price file,
a catalog) has no check: `wait` returns False when `pause` says the process is stopping (SIGTERM).
The clock and the pause are injected.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from controller.clock import Clock

log = logging.getLogger(__name__)

LOG_EVERY = 300.0  # seconds between repeats of an unchanged problem in the log
POLL_SECONDS = 2.0  # the settings job's period (`main.SETTINGS_SECONDS`)

Check = Callable[[], str]  # the problem now ("" when the configuration works)
Pause = Callable[[float], bool]  # wait up to that many seconds; True when the process is stopping


class ConfigWait:
    def __init__(self, clock: Clock, poll_seconds: float = POLL_SECONDS, log_every: float = LOG_EVERY) -> None:
        self.clock, self.poll_seconds, self.log_every = clock, poll_seconds, log_every
        self.problem = ""
        self.check: Check | None = None
        self._logged_at = -1e18

    def failed(self, problem: str, check: Check | None) -> None:
        """The configuration cannot work because of `problem`; `check` re-examines it (None: only a
        restart with other flags can fix it)."""
        self.check = check
        self._note(problem)

    def _note(self, problem: str) -> None:
        now = self.clock.now()
        if problem != self.problem:
            hint = "re-reading the settings until they work" if self.check else "fix the flag or variable and restart"
            log.error("not configured, not acting (%s): %s", hint, problem)
            self._logged_at = now
        elif now - self._logged_at >= self.log_every:
            log.error("still not configured: %s", problem)
            self._logged_at = now
        self.problem = problem

    def wait(self, pause: Pause) -> bool:
        """Until `check` finds no problem (True) or the process is stopping (False)."""
        while not pause(self.poll_seconds):
            problem = self.check() if self.check is not None else self.problem
            if not problem:
                log.info("the configuration works now (was: %s); starting", self.problem)
                return True
            self._note(problem)
        return False

    def unavailable(self) -> str:
        """What the HTTP API answers (with 503) instead of the controller's answers."""
        return f"not configured: {self.problem}"

    def status(self) -> dict[str, Any]:
        """`/api/v1/status` while not configured (`notReady` → `/readyz`)."""
        return {"configured": False, "leader": False, "synced": False, "notReady": self.unavailable()}
