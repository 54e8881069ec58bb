"""When a buffered request is whole, and which framings are refused (issue 20, defect 2)."""

from __future__ import annotations

import pytest

from webapp.framing import MAX_CHUNKS, Framing, request_framing

POST = b"POST / HTTP/1.1\r\nHost: x\r\n"
CHUNKED = POST + b"Transfer-Encoding: chunked\r\n\r\n"

CASES = {
    "head not finished": (POST, Framing.INCOMPLETE),
    "no body": (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", Framing.COMPLETE),
    "body short": (POST + b"content-length: 4\r\n\r\n{}", Framing.INCOMPLETE),
    "body whole": (POST + b'content-length: 4\r\n\r\n{""}', Framing.COMPLETE),
    "content-length not digits": (POST + b"Content-Length: nope\r\n\r\n", Framing.MALFORMED),
    "content-length signed": (POST + b'Content-Length: +4\r\n\r\n{""}', Framing.MALFORMED),
    "content-length underscore": (POST + b'Content-Length: 0_4\r\n\r\n{""}', Framing.MALFORMED),
    "content-lengths differ": (POST + b'Content-Length: 4\r\nContent-Length: 5\r\n\r\n{""}', Framing.MALFORMED),
    "content-length over the limit": (POST + b"Content-Length: 99999999\r\n\r\n", Framing.TOO_LARGE),
    "both framings": (POST + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n", Framing.MALFORMED),
    "unknown coding": (POST + b"Transfer-Encoding: gzip, chunked\r\n\r\n", Framing.MALFORMED),
    "one chunk, no end": (CHUNKED + b"2\r\n{}\r\n", Framing.INCOMPLETE),
    "one chunk and the end": (CHUNKED + b"2\r\n{}\r\n0\r\n\r\n", Framing.COMPLETE),
    "chunk extensions and trailers": (CHUNKED + b"2;x=y\r\n{}\r\n0\r\nT: v\r\n\r\n", Framing.COMPLETE),
    "trailers not finished": (CHUNKED + b"2\r\n{}\r\n0\r\nT: v\r\n", Framing.INCOMPLETE),
    # the attack: chunk data that ends like the last chunk, more data promised
    "data ending in 0 CRLF CRLF": (CHUNKED + b"10\r\n{}xxxxxxxxx0\r\n\r\n", Framing.INCOMPLETE),
    "data ending in 0 CRLF CRLF, then a trickle": (CHUNKED + b"10\r\n{}xxxxxxx0\r\n\r\nab", Framing.INCOMPLETE),
    "chunk size not hex": (CHUNKED + b"zz\r\n{}\r\n0\r\n\r\n", Framing.MALFORMED),
    "chunk size negative": (CHUNKED + b"-2\r\n{}\r\n0\r\n\r\n", Framing.MALFORMED),
    "chunk data longer than its size": (CHUNKED + b"1\r\n{}\r\n0\r\n\r\n", Framing.MALFORMED),
    "chunk size line endless": (CHUNKED + b"1" * 2000, Framing.MALFORMED),
    "chunked over the limit": (CHUNKED + b"ffff\r\n", Framing.TOO_LARGE),
    "head over 64 KiB": (b"GET /" + b"x" * 70_000, Framing.TOO_LARGE),
}


@pytest.mark.parametrize(("buffer", "framing"), CASES.values(), ids=CASES.keys())
def test_a_request_is_whole_only_when_its_framing_says_so(buffer: bytes, framing: Framing) -> None:
    verdict = request_framing(buffer, max_body=100)
    assert verdict.framing is framing
    assert bool(verdict.reason) is (framing in (Framing.MALFORMED, Framing.TOO_LARGE))


def test_the_work_per_arrival_is_bounded() -> None:
    many = CHUNKED + b"1\r\nx\r\n" * (MAX_CHUNKS + 1)
    assert request_framing(many, max_body=10 * MAX_CHUNKS).framing is Framing.TOO_LARGE
