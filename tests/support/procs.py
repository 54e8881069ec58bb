"""Starting and stopping karpy processes in tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from localcluster.procs import free_port
from tests.support.poll import until

__all__ = ["free_port", "karpy", "stop", "wait_until"]


def karpy(args: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    """Start `karpy ARGS` in its own process group, output to `log`."""
    out = log.open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "karpy", *args], stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )


def wait_until(
    check: Callable[[], bool], timeout: float, what: str, proc: subprocess.Popen[bytes] | None = None
) -> None:
    """`until` (the one poller) for a process starting: it fails at once if `proc` exits."""

    def ready() -> bool:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what}: process exited with {proc.returncode}")
        return check()

    until(ready, timeout, what, interval=0.1, ignore=(OSError,))


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
