"""The controller's malloc arenas (`controller/allocator.py`), each case in a fresh interpreter
(the limit holds for the rest of a process's life)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent(
    """
    import ctypes, sys, tempfile, threading
    from controller.allocator import limit_arenas

    limited = limit_arenas()
    barrier = threading.Barrier(12)
    kept = []

    def work():
        barrier.wait()  # every thread allocates at once: each would take an arena of its own
        kept.append([bytearray(2048) for _ in range(2000)])

    threads = [threading.Thread(target=work) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    with tempfile.NamedTemporaryFile() as out:
        stream = libc.fopen(out.name.encode(), b"w")
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        arenas = open(out.name).read().count("<heap nr=")
    print(limited, arenas)
    """
)


def arenas_after_twelve_threads(env: dict[str, str]) -> tuple[str, int]:
    clean = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM], env={**clean, **env}, capture_output=True, text=True, check=True, timeout=60
    )
    limited, arenas = out.stdout.split()
    return limited, int(arenas)


def test_twelve_threads_allocating_at_once_share_two_arenas() -> None:
    assert arenas_after_twelve_threads({}) == ("True", 2)


def test_without_the_limit_they_take_more() -> None:
    """What the limit changes (glibc allows eight arenas per core): the test above can fail."""
    _, arenas = arenas_after_twelve_threads({"MALLOC_ARENA_MAX": "8"})
    assert arenas > 2


def test_the_environments_value_is_left_to_glibc() -> None:
    assert arenas_after_twelve_threads({"MALLOC_ARENA_MAX": "1"}) == ("False", 1)
