"""The process's memory allocator: glibc malloc limited to a few arenas (issue 21).

glibc gives threads their own malloc arenas, up to eight per core, and each arena keeps the memory
its threads freed for them. The controller runs ~20 threads, and ~60 while a provisioning pass
launches and binds, each making and dropping megabytes (snapshots, a pass's solve, the JSON of a
page or an event), so what the process holds grew with the arenas, not with the cluster
(`bench/memory.py`, 5,000 pending pods and 1,000 nodes on this 2-core machine: 16 arenas held
186 MiB, 160 MiB of it free, for a controller at 338 MiB after three passes; with two arenas 44 MiB
and 198 MiB). `limit_arenas()` sets glibc's `M_ARENA_MAX` before any thread starts, as
`MALLOC_ARENA_MAX=2` in the environment would; the environment's own value, when set, is left to
glibc. Elsewhere (no glibc) it does nothing.
"""

from __future__ import annotations

import ctypes
import os

M_ARENA_MAX = -8  # glibc's mallopt parameter
ARENAS = 2
ENV = "MALLOC_ARENA_MAX"


def limit_arenas(count: int = ARENAS) -> bool:
    """At most `count` malloc arenas for the threads started from now on; True when set."""
    if os.environ.get(ENV):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, count))
