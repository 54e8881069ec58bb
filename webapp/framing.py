"""Whether a buffer holds one whole HTTP/1.1 request: the worker's gate to its threads (pure).

`request_framing(buffer, max_body)` reads the head and the body's framing as RFC 9112 defines
it — `Content-Length` (digits only, one value) or `Transfer-Encoding: chunked`, walked chunk by
chunk (hex size, optional extensions, data, CRLF; the last chunk, trailers, the empty line) — and
answers one of:

- `INCOMPLETE` — wait for more bytes (the worker's deadline bounds the wait);
- `COMPLETE` — the whole request is in `buffer`, nothing a thread does will read the socket;
- `MALFORMED` — the framing can never become valid (the worker answers 400 and closes);
- `TOO_LARGE` — the head or body is over the limits (the worker answers 413 and closes).

A chunk whose data merely ends in `0\\r\\n\\r\\n` is data, not the end (issue 20, defect 2).
No I/O, no clock.
"""

from __future__ import annotations

import enum
import re

MAX_HEADER_BYTES = 64 * 1024
MAX_CHUNK_LINE = 1024  # a chunk-size line with its extensions
MAX_CHUNKS = 10_000  # each arrival re-walks the framing: bounded work per request
_DIGITS = re.compile(rb"[0-9]{1,19}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")


class Framing(enum.Enum):
    INCOMPLETE = "incomplete"
    COMPLETE = "complete"
    MALFORMED = "malformed"
    TOO_LARGE = "too large"


class Verdict:
    """A framing and, unless complete or incomplete, why (a short phrase for one log line)."""

    __slots__ = ("framing", "reason")

    def __init__(self, framing: Framing, reason: str = "") -> None:
        self.framing, self.reason = framing, reason

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Verdict) and (self.framing, self.reason) == (other.framing, other.reason)

    def __repr__(self) -> str:
        return f"Verdict({self.framing.name}, {self.reason!r})"


WAIT = Verdict(Framing.INCOMPLETE)
DONE = Verdict(Framing.COMPLETE)


def request_framing(buffer: bytes | bytearray, max_body: int) -> Verdict:
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return Verdict(Framing.TOO_LARGE, "request head over 64 KiB") if len(buffer) > MAX_HEADER_BYTES else WAIT
    if end > MAX_HEADER_BYTES:
        return Verdict(Framing.TOO_LARGE, "request head over 64 KiB")
    lengths: set[bytes] = set()
    encodings: list[bytes] = []
    for line in bytes(buffer[:end]).split(b"\r\n")[1:]:
        name, colon, value = line.partition(b":")
        if not colon:
            return Verdict(Framing.MALFORMED, "a header line without a colon")
        name, value = name.lower(), value.strip(b" \t")
        if name == b"content-length":
            lengths.add(value)
        elif name == b"transfer-encoding":
            encodings += [v.strip(b" \t").lower() for v in value.split(b",")]
    start = end + 4
    if encodings:
        if lengths:
            return Verdict(Framing.MALFORMED, "both Content-Length and Transfer-Encoding")
        if encodings != [b"chunked"]:
            return Verdict(Framing.MALFORMED, "a transfer coding other than chunked")
        return _chunked(buffer, start, max_body)
    if not lengths:
        return DONE
    if len(lengths) > 1 or not _DIGITS.fullmatch(next(iter(lengths))):
        return Verdict(Framing.MALFORMED, "an invalid Content-Length")
    length = int(next(iter(lengths)))
    if length > max_body:
        return Verdict(Framing.TOO_LARGE, f"a body of {length} bytes")
    return DONE if len(buffer) - start >= length else WAIT


def _chunked(data: bytes | bytearray, pos: int, max_body: int) -> Verdict:
    total = chunks = 0
    while True:
        chunks += 1
        if chunks > MAX_CHUNKS:
            return Verdict(Framing.TOO_LARGE, f"more than {MAX_CHUNKS} chunks")
        eol = data.find(b"\r\n", pos, pos + MAX_CHUNK_LINE + 2)
        if eol < 0:
            too_long = len(data) - pos > MAX_CHUNK_LINE
            return Verdict(Framing.MALFORMED, "a chunk-size line too long") if too_long else WAIT
        size_text = data[pos:eol].split(b";", 1)[0].rstrip(b" \t")
        if not _HEX.fullmatch(size_text):
            return Verdict(Framing.MALFORMED, "an invalid chunk size")
        size, pos = int(size_text, 16), eol + 2
        if size == 0:
            break
        total += size
        if total > max_body:
            return Verdict(Framing.TOO_LARGE, f"a chunked body over {max_body} bytes")
        if len(data) < pos + size + 2:
            return WAIT
        if data[pos + size : pos + size + 2] != b"\r\n":
            return Verdict(Framing.MALFORMED, "chunk data not followed by CRLF")
        pos += size + 2
    trailers = 0
    while True:  # trailer fields, then the empty line
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            return Verdict(Framing.TOO_LARGE, "trailers over 64 KiB") if len(data) - pos > MAX_HEADER_BYTES else WAIT
        if eol == pos:
            return DONE
        trailers += eol + 2 - pos
        if trailers > MAX_HEADER_BYTES:
            return Verdict(Framing.TOO_LARGE, "trailers over 64 KiB")
        if b":" not in data[pos:eol]:
            return Verdict(Framing.MALFORMED, "a trailer line without a colon")
        pos = eol + 2
