"""Processes of the local control plane: start in their own group, identify, stop by pid.

Each component runs in a new session, so its process group id equals its pid and stopping the
group also stops anything it spawned. A pid recorded in the state file is only signalled while
`/proc/<pid>/stat` still shows the same start time, so a recycled pid is never killed.
Neighbours: `cluster.py` decides what to start; `state.py` persists `Proc` records.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Proc:
    """A started component: what the state file records about it."""

    name: str
    pid: int
    start_ticks: int
    log: str


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_ticks(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22 (starttime); the command name in parentheses may itself contain spaces.
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])


def _die_with(parent: int) -> Callable[[], None]:
    """A preexec hook: SIGTERM the child when the thread that started it exits (Linux)."""

    def hook() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return hook


def start(
    name: str,
    argv: Sequence[str],
    log_dir: Path,
    die_with_parent: bool = False,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Proc:
    """Start `argv` in a new session (process group) with output appended to `log_dir/name.log`
    (environment: this process's, with `env` added).

    `die_with_parent` asks the kernel to SIGTERM the component when the calling *thread* exits,
    so a killed test run cannot leave a control plane behind; call it from the main thread.
    """
    log = log_dir / f"{name}.log"
    with log.open("ab") as out:
        child = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with(os.getpid()) if die_with_parent else None,
            cwd=cwd,
            env={**os.environ, **env} if env else None,
        )
    ticks = _start_ticks(child.pid)
    return Proc(name=name, pid=child.pid, start_ticks=ticks if ticks is not None else -1, log=str(log))


def alive(proc: Proc) -> bool:
    """True while the recorded process (same pid and start time) is running."""
    if proc.pid <= 0:
        return False
    _reap(proc.pid)
    ticks = _start_ticks(proc.pid)
    return ticks is not None and ticks == proc.start_ticks


def cmdline(proc: Proc) -> list[str]:
    """The argv of the recorded process while it runs (from `/proc/<pid>/cmdline`)."""
    if not alive(proc):
        raise ProcessLookupError(f"{proc.name} (pid {proc.pid}) is not running")
    raw = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
    return [arg.decode() for arg in raw.split(b"\0")[:-1]]


def _reap(pid: int) -> None:
    """Collect our own exited child so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def stop(proc: Proc, grace_seconds: float = 10.0) -> None:
    """SIGTERM the process group of `proc`, then SIGKILL it after `grace_seconds`."""
    if not alive(proc):
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        deadline = time.monotonic() + (grace_seconds if sig == signal.SIGTERM else 5.0)
        while time.monotonic() < deadline:
            if not alive(proc):
                return
            time.sleep(0.05)


def log_tail(proc: Proc, lines: int = 25) -> str:
    try:
        text = Path(proc.log).read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class NotReadyError(RuntimeError):
    """A component did not become ready in time, or exited while starting."""


def wait_until(
    what: str,
    check: Callable[[], bool],
    timeout: float,
    watch: Sequence[Proc] = (),
    interval: float = 0.1,
) -> None:
    """Poll `check` until it is true; fail early if a watched process has exited."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError):
            if check():
                return
        for proc in watch:
            if not alive(proc):
                raise NotReadyError(f"{proc.name} exited while waiting for {what}:\n{log_tail(proc)}")
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {p.name} ({p.log})\n{log_tail(p, 10)}" for p in watch)
            raise NotReadyError(f"timed out after {timeout:.0f}s waiting for {what}\n{tails}")
        time.sleep(interval)
