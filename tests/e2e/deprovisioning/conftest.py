"""Fixtures for the deprovisioning end-to-end tests: the controller e2e fixtures, reused.

`karpy` (see `tests/e2e/controller/conftest.py`) gives a namespace, a simulated cloud and a
runner for `karpy controller`; `FAST` are the flags that shorten deprovisioning's timings
(validation wait, poll period, consolidated reset, job interval) so a test takes seconds. A
new node is nominated, hence left alone by deprovisioning, for max(2 × batch max, 10 s)
(spec §5.10): `--batch-max-seconds 5` brings that to its 10 s floor.
"""

from __future__ import annotations

from tests.e2e.controller.conftest import karpy

__all__ = ["FAST", "karpy"]

FAST = (
    "--batch-max-seconds", "5",
    "--deprovisioning-interval-seconds", "0.5",
    "--validation-wait-seconds", "2",
    "--poll-period-seconds", "1",
    "--consolidated-reset-seconds", "5",
    "--replacement-timeout-seconds", "60",
)  # fmt: skip
