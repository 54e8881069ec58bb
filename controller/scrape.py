"""What a `/metrics` request gets: one written body shared by the scrapes that arrive together,
gzipped when the client asks as Go's promhttp does.

At 1,000 nodes / 20,000 pods the text is ~16 MB (issue 21). `Scrapes.get()` writes it
(`exposition()`) for the first scrape; one that arrives while it is being written waits for that
writing (at most `wait` seconds, the connection's deadline) and gets the same body, so a client
that opens many connections at once costs one writing, not one per connection. A body's gzip is
compressed once, for whichever of its scrapes asks first. `gzip_accepted(header)` reads
Accept-Encoding as Karpenter v0.31's promhttp (client_golang before 1.20) reads it. Served by
`controller/httpserver.py`.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable

from controller.exposition import exposition

# zlib's fastest level: at 1,000 nodes / 20,000 pods 14.4 MiB → 0.42 MiB in 23 ms of CPU, against
# level 6's (Go's default) 0.29 MiB in 50 ms (bench/metrics.py)
GZIP_LEVEL = 1


def gzip_accepted(header: str | None) -> bool:
    """True when a comma-separated part of `header`, spaces trimmed, is `gzip` or starts `gzip;` —
    promhttp's rule: q-values are not weighed, names are case-sensitive, anything else is plain."""
    return any(part.strip() == "gzip" or part.strip().startswith("gzip;") for part in (header or "").split(","))


class Scrape:
    """One written body, plain and (on demand, once) gzipped."""

    def __init__(self) -> None:
        self.text = b""
        self.error: Exception | None = RuntimeError("metrics not written")  # until written
        self.done = threading.Event()
        self._gzipped: bytes | None = None
        self._lock = threading.Lock()

    def body(self, gzipped: bool) -> bytes:
        if not gzipped:
            return self.text
        with self._lock:
            if self._gzipped is None:  # mtime 0, as Go's gzip writer leaves it
                self._gzipped = gzip.compress(self.text, compresslevel=GZIP_LEVEL, mtime=0)
            return self._gzipped


class Scrapes:
    def __init__(self, write: Callable[[], bytes] = exposition, wait: float = 10.0) -> None:
        self._write, self._wait = write, wait
        self._lock = threading.Lock()
        self._writing: Scrape | None = None
        self.waiting = 0  # scrapes waiting for the one being written

    def get(self) -> Scrape:
        """The body being written now, or a new one; raises what writing it raised, or
        TimeoutError after `wait` seconds."""
        with self._lock:
            scrape, first = self._writing, self._writing is None
            if scrape is None:
                scrape = self._writing = Scrape()
            else:
                self.waiting += 1
        if first:
            try:
                scrape.text, scrape.error = self._write(), None
            except Exception as err:
                scrape.error = err
                raise
            finally:
                with self._lock:
                    self._writing = None
                scrape.done.set()
        else:
            done = scrape.done.wait(self._wait)
            with self._lock:
                self.waiting -= 1
            if not done:
                raise TimeoutError(f"metrics still being written after {self._wait:.0f} s")
            if scrape.error is not None:
                raise RuntimeError(f"writing metrics: {type(scrape.error).__name__}") from scrape.error
        return scrape
