"""gunicorn worker for the webapp: no client can hold a thread, the event loop, or a connection slot.

gunicorn's `gthread` worker does the TLS handshake with a blocking socket in its event loop,
reads each request in a pool thread without a total deadline, and stops polling its sockets
once it holds `worker_connections` — it then neither accepts nor notices clients leaving, while
its heartbeat keeps the arbiter from restarting it (issues 14 and 20). `GuardedThreadWorker`
keeps gthread's pool, keep-alive and response handling, and changes the rest:

- every connection has `request_timeout` seconds **from accept** (not from its first byte) to
  deliver a whole request; one that does not is closed, idle or trickling alike;
- the event loop always polls: it accepts, sees clients leave (end of file), and enforces the
  deadlines even when every slot is taken; a connection over `worker_connections` pushes out the
  oldest one still waiting for its request (then the oldest kept-alive one), so a new client —
  the API server — always gets in;
- the event loop does the TLS handshake and reads the request non-blocking into a buffer; only a
  request whose framing is complete (`framing.request_framing`: Content-Length, or chunked
  walked chunk by chunk) goes to a thread, which then reads only that buffer — and, should it
  ever read the socket, under what is left of the same deadline;
- a request whose framing is malformed or too large is answered 400 / 413 by the loop itself
  (one short log line, no traceback) and closed.

Neighbours: `server.py` selects this worker (`worker_class`) and hands it `request_timeout`
and the body limit from `WebappSettings` (class attributes set before gunicorn forks);
`framing.py` decides when a request is whole.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import selectors
import socket
import ssl
import time
from concurrent import futures
from functools import partial
from typing import Any

from gunicorn import http
from gunicorn import sock as gsock
from gunicorn.workers.gthread import TConn, ThreadWorker

from webapp.framing import Framing, Verdict, request_framing

log = logging.getLogger(__name__)

_READ_CHUNK = 64 * 1024
_NOTE_EVERY = 10.0  # seconds between two log lines about refused requests
_STATUS = {Framing.MALFORMED: "400 Bad Request", Framing.TOO_LARGE: "413 Request Entity Too Large"}


class _BufferedSocket:
    """The client socket as gunicorn's parser sees it: the bytes the event loop read come first;
    past them, a read waits at most until `deadline` (monotonic seconds)."""

    def __init__(self, sock: socket.socket) -> None:
        self.raw = sock
        self.buffer = bytearray()
        self.deadline = float("inf")

    def recv(self, size: int) -> bytes:
        if self.buffer:
            out = bytes(self.buffer[:size])
            del self.buffer[:size]
            return out
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("request deadline passed")
        if self.raw.gettimeout() != 0.0:
            self.raw.settimeout(min(left, self.raw.gettimeout() or left))
        return self.raw.recv(size)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def request_complete(buffer: bytes | bytearray, max_body: int) -> Verdict:
    """The framing verdict of `buffer` (see `framing.request_framing`)."""
    return request_framing(buffer, max_body)


class GuardedThreadWorker(ThreadWorker):  # type: ignore[misc]
    """gthread with accept-to-request deadlines, an always-polling loop, and bounded slots."""

    request_timeout = 10.0
    max_body = 3 * 1024 * 1024

    def init_process(self) -> None:
        # connections not yet handed to a thread → their deadline (insertion order: oldest first)
        self._pending: dict[TConn, float] = {}
        self._noted = (float("-inf"), 0)  # when the last refusal was logged, refusals since
        super().init_process()

    # accepting -------------------------------------------------------------------------------

    def accept(self, server: Any, listener: socket.socket) -> None:
        try:
            sock, client = listener.accept()
        except OSError as err:
            if err.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                self._shed()  # out of descriptors: make room for the next attempt
            elif err.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        conn = TConn(self.cfg, sock, client, server)
        self.nr_conns += 1
        if self.nr_conns > self.worker_connections:
            self._shed()
        self._pending[conn] = time.monotonic() + self.request_timeout
        self._wait(conn, selectors.EVENT_READ)

    def _shed(self) -> None:
        """Close the oldest connection still waiting for its request, else the oldest kept alive."""
        if self._pending:
            self._drop(next(iter(self._pending)))
            return
        with self._lock:
            try:
                conn = self._keep.popleft()
            except IndexError:
                return
        self._drop(conn)

    # reading a request -------------------------------------------------------------------------

    def on_client_socket_readable(self, conn: TConn, client: Any) -> None:
        with self._lock:
            with contextlib.suppress(KeyError, ValueError):
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
                verdict = request_complete(conn.sock.buffer, self.max_body)
                if verdict.framing is Framing.COMPLETE:
                    self._dispatch(conn)
                    return
                if verdict.framing is not Framing.INCOMPLETE:
                    self._refuse(conn, verdict)
                    return
        except (ssl.SSLWantReadError, BlockingIOError):
            self._wait(conn, selectors.EVENT_READ)
        except ssl.SSLWantWriteError:
            self._wait(conn, selectors.EVENT_WRITE)
        except (OSError, ValueError):
            self._drop(conn)

    def _ssl_context(self) -> ssl.SSLContext:
        """The TLS context, rebuilt only when the certificate files change (a renewal replaces
        them): building it per connection cost milliseconds, and 2,000 clients leaving at once
        then held the loop for seconds."""
        stamp = tuple(
            (st.st_ino, st.st_mtime_ns, st.st_size)
            for st in (os.stat(f) for f in (self.cfg.certfile, self.cfg.keyfile) if f)
        )
        cached = getattr(self, "_context", None)
        if cached is None or cached[0] != stamp:
            cached = (stamp, gsock.ssl_context(self.cfg))
            self._context = cached
        context: ssl.SSLContext = cached[1]
        return context

    def _start(self, conn: TConn) -> None:
        conn.initialized = True
        sock = conn.sock
        sock.setblocking(False)
        if sock.recv(1, socket.MSG_PEEK) == b"":  # the client left before sending anything
            raise ConnectionAbortedError("closed by the client")
        if self.cfg.is_ssl:
            context = self._ssl_context()
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
        conn.sock.deadline = time.monotonic() + self.request_timeout
        future = self.tpool.submit(self.handle, conn)
        self._wrap_future(future, conn)

    def _refuse(self, conn: TConn, verdict: Verdict) -> None:
        """Answer a request that can never be served (400/413) from the loop, then close."""
        body = json.dumps({"error": f"bad request: {verdict.reason}"}).encode()
        head = (f"HTTP/1.1 {_STATUS[verdict.framing]}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()  # fmt: skip
        with contextlib.suppress(OSError, ValueError):
            conn.sock.raw.settimeout(0.5)  # a few hundred bytes: the kernel's buffer takes them at once
            conn.sock.raw.sendall(head + body)
        self._note(conn, verdict)
        self._drop(conn)

    def _note(self, conn: TConn, verdict: Verdict) -> None:
        """One short line per refusal, at most one per `_NOTE_EVERY` seconds (with a count)."""
        now = time.monotonic()
        last, since = self._noted
        if now - last < _NOTE_EVERY:
            self._noted = (last, since + 1)
            return
        more = f" ({since} more since the last line)" if since else ""
        peer = conn.client[0] if isinstance(conn.client, tuple) else conn.client
        log.warning("refused a request from %s: %s%s", peer, verdict.reason, more)
        self._noted = (now, 0)

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

    # the loop --------------------------------------------------------------------------------

    def run(self) -> None:
        """gthread's loop, except that it always polls (see the module doc)."""
        for sock in self.sockets:
            sock.setblocking(False)
            self.poller.register(sock, selectors.EVENT_READ, partial(self.accept, sock.getsockname()))
        while self.alive:
            self.notify()
            for key, _ in self.poller.select(1.0):
                key.data(key.fileobj)
            done = futures.wait(self.futures, timeout=0, return_when=futures.FIRST_COMPLETED).done
            for fut in done:
                self.futures.remove(fut)
            if not self.is_parent_alive():
                break
            self.murder_keepalived()
        self.tpool.shutdown(False)
        self.poller.close()
        for sock in self.sockets:
            sock.close()
        futures.wait(self.futures, timeout=self.cfg.graceful_timeout)
