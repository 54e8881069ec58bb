"""gunicorn worker for the webapp: slow or stalled clients cannot hold a thread or the event loop.

gunicorn's `gthread` worker does the TLS handshake with a blocking socket in its event loop and
reads each request in a pool thread without a deadline, so a few clients that send three bytes
of a ClientHello block all admission (issue 14, item 4). `GuardedThreadWorker` keeps gthread's
pool, keep-alive and response handling, and changes what happens before a request reaches
the pool: the event loop itself does the TLS handshake and reads the request non-blocking into a
buffer, and only a complete request (headers, then `Content-Length` bytes or a chunked body's
last chunk) goes to a thread. A connection that has not delivered one within
`request_timeout` seconds of its first byte is closed. Threads then only ever wait on a socket
with `request_timeout` as its timeout (writing the answer).

Neighbours: `server.py` selects this worker (`worker_class`) and hands it `request_timeout`
and the body limit from `WebappSettings` (class attributes set before gunicorn forks).
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import ssl
import time
from functools import partial
from typing import Any

from gunicorn import http
from gunicorn import sock as gsock
from gunicorn.workers.gthread import TConn, ThreadWorker

MAX_HEADER_BYTES = 64 * 1024
_READ_CHUNK = 64 * 1024


class _BufferedSocket:
    """The client socket as gunicorn's parser sees it: the bytes the event loop read come first."""

    def __init__(self, sock: socket.socket) -> None:
        self.raw = sock
        self.buffer = bytearray()

    def recv(self, size: int) -> bytes:
        if self.buffer:
            out = bytes(self.buffer[:size])
            del self.buffer[:size]
            return out
        return self.raw.recv(size)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def request_complete(buffer: bytes | bytearray, max_body: int) -> bool:
    """True once `buffer` holds a whole HTTP/1.x request, or more than a request may be."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return len(buffer) > MAX_HEADER_BYTES
    length = 0
    for line in bytes(buffer[:end]).split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"transfer-encoding" and b"chunked" in value.lower():
            return buffer.endswith(b"0\r\n\r\n") or len(buffer) - end > max_body + MAX_HEADER_BYTES
        if name == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                return True  # let gunicorn answer 400
    return len(buffer) - (end + 4) >= min(length, max_body + 1)


class GuardedThreadWorker(ThreadWorker):  # type: ignore[misc]
    """gthread with the TLS handshake and request reading done non-blocking, under a deadline."""

    request_timeout = 10.0
    max_body = 3 * 1024 * 1024

    def init_process(self) -> None:
        self._pending: dict[TConn, float] = {}  # connections not yet handed to a thread → deadline
        super().init_process()

    def on_client_socket_readable(self, conn: TConn, client: Any) -> None:
        with self._lock:
            self.poller.unregister(client)
            if conn.initialized and conn not in self._pending:
                try:
                    self._keep.remove(conn)  # a kept-alive connection starts its next request
                except ValueError:
                    return
        self._advance(conn)

    def _advance(self, conn: TConn) -> None:
        self._pending.setdefault(conn, time.monotonic() + self.request_timeout)
        try:
            if not conn.initialized:
                self._start(conn)
            raw = conn.sock.raw
            if isinstance(raw, ssl.SSLSocket) and not getattr(conn, "handshaken", False):
                raw.do_handshake()
                conn.handshaken = True
            while True:
                data = raw.recv(_READ_CHUNK)
                if not data:
                    self._drop(conn)
                    return
                conn.sock.buffer += data
                if request_complete(conn.sock.buffer, self.max_body):
                    self._dispatch(conn)
                    return
        except (ssl.SSLWantReadError, BlockingIOError):
            self._wait(conn, selectors.EVENT_READ)
        except ssl.SSLWantWriteError:
            self._wait(conn, selectors.EVENT_WRITE)
        except (OSError, ValueError):
            self._drop(conn)

    def _start(self, conn: TConn) -> None:
        conn.initialized = True
        sock = conn.sock
        sock.setblocking(False)
        if self.cfg.is_ssl:
            context = gsock.ssl_context(self.cfg)
            sock = context.wrap_socket(
                sock,
                server_side=True,
                do_handshake_on_connect=False,
                suppress_ragged_eofs=self.cfg.suppress_ragged_eofs,
            )
        conn.sock = _BufferedSocket(sock)
        conn.parser = http.RequestParser(self.cfg, conn.sock, conn.client)

    def _wait(self, conn: TConn, events: int) -> None:
        with self._lock:
            self.poller.register(conn.sock, events, partial(self.on_client_socket_readable, conn))

    def _dispatch(self, conn: TConn) -> None:
        del self._pending[conn]
        conn.sock.raw.settimeout(self.request_timeout)
        future = self.tpool.submit(self.handle, conn)
        self._wrap_future(future, conn)

    def _drop(self, conn: TConn) -> None:
        self._pending.pop(conn, None)
        self.nr_conns -= 1
        with self._lock, contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(conn.sock)
        conn.close()

    def murder_keepalived(self) -> None:
        super().murder_keepalived()
        now = time.monotonic()
        for conn in [c for c, deadline in self._pending.items() if deadline <= now]:
            self._drop(conn)
