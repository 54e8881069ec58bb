"""One /metrics body for the scrapes that arrive together; gzip as Go's promhttp negotiates it."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable

import pytest

from controller.scrape import Scrape, Scrapes, gzip_accepted
from tests.support.poll import until

# Accept-Encoding → gzip? (promhttp before client_golang 1.20: a part is `gzip` or starts `gzip;`)
NEGOTIATION = {
    "gzip": True,
    "deflate, gzip": True,
    " br ,  gzip  ": True,
    "gzip;q=1.0, identity; q=0.5, *;q=0": True,
    "gzip;q=0": True,  # q-values are not weighed
    "": False,
    "identity": False,
    "deflate, br": False,
    "GZIP": False,  # case-sensitive
    "x-gzip": False,
    "gzipped": False,
    "gzip q=1": False,
    "*": False,
    ",,,;;;": False,
    "gzip\x00": False,
    "\xff\xfegzip": False,  # bytes no encoding names, as the header parser decodes them (Latin-1)
}


@pytest.mark.parametrize(("header", "wanted"), NEGOTIATION.items())
def test_accept_encoding_read_as_promhttp_reads_it(header: str, wanted: bool) -> None:
    assert gzip_accepted(header) is wanted


def test_no_header_is_plain() -> None:
    assert gzip_accepted(None) is False


def test_the_gzip_is_compressed_once_and_reads_back() -> None:
    scrape = Scrape()
    scrape.text = b"# TYPE a gauge\na 1.0\n" * 1000
    packed = scrape.body(True)
    assert packed is scrape.body(True) and scrape.body(False) is scrape.text
    assert gzip.decompress(packed) == scrape.text and len(packed) < len(scrape.text) // 10
    assert packed[4:8] == b"\0\0\0\0"  # no modification time, as Go's writer leaves it


class Blocked:
    """A writer that blocks until released, counting its writings."""

    def __init__(self, body: bytes = b"a 1.0\n", error: Exception | None = None) -> None:
        self.release, self.calls, self.body, self.error = threading.Event(), 0, body, error

    def __call__(self) -> bytes:
        self.calls += 1
        assert self.release.wait(10)
        if self.error is not None:
            raise self.error
        return self.body


def in_threads(count: int, call: Callable[[], object]) -> tuple[list[threading.Thread], list[object]]:
    results: list[object] = []

    def run() -> None:
        try:
            results.append(call())
        except Exception as err:
            results.append(err)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    return threads, results


def test_scrapes_that_arrive_while_one_is_written_share_it() -> None:
    writer = Blocked()
    scrapes = Scrapes(writer, wait=10)
    first, results = in_threads(1, scrapes.get)
    until(lambda: writer.calls == 1, 5, "the first scrape writing")
    rest, more = in_threads(7, scrapes.get)
    until(lambda: scrapes.waiting == 7, 5, "seven scrapes waiting for it")
    writer.release.set()
    for thread in first + rest:
        thread.join(5)
    assert writer.calls == 1
    assert len({id(r) for r in results + more}) == 1 and isinstance(results[0], Scrape)
    assert scrapes.get().text == b"a 1.0\n" and writer.calls == 2  # a later scrape writes anew


def test_a_failed_writing_fails_its_scrapes_and_the_next_writes_again() -> None:
    writer = Blocked(error=ValueError("collector broke"))
    scrapes = Scrapes(writer, wait=10)
    first, results = in_threads(1, scrapes.get)
    until(lambda: writer.calls == 1, 5, "the first scrape writing")
    rest, more = in_threads(2, scrapes.get)
    until(lambda: scrapes.waiting == 2, 5, "two scrapes waiting")
    writer.release.set()
    for thread in first + rest:
        thread.join(5)
    assert isinstance(results[0], ValueError)
    assert all(isinstance(r, RuntimeError) and "ValueError" in str(r) for r in more)
    writer.error = None
    assert scrapes.get().text == b"a 1.0\n"


def test_a_waiting_scrape_gives_up_after_the_wait() -> None:
    writer = Blocked()
    scrapes = Scrapes(writer, wait=0.2)
    first, _ = in_threads(1, scrapes.get)
    until(lambda: writer.calls == 1, 5, "the first scrape writing")
    with pytest.raises(TimeoutError, match="still being written"):
        scrapes.get()
    assert scrapes.waiting == 0
    writer.release.set()
    first[0].join(5)
