"""Starting and stopping karpy processes in tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from localcluster.procs import free_port

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
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what}: process exited with {proc.returncode}")
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{what}: not ready after {timeout}s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
