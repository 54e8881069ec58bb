"""Serve the webapp under gunicorn with TLS 1.2 or newer (`karpy webapp`).

The worker (`worker.GuardedThreadWorker`) builds the TLS context for every accepted connection from the files in
`cert_dir`, so renewed files are served from the next connection on, with no reload (a Secret
volume renewed by cert-manager needs nothing more). With `cert_secret` set, the files come from
the Secret kept by `certificates.ensure` before gunicorn starts, and a thread in gunicorn's
master checks it again every `cert_check_seconds` and rewrites the files when the serving
certificate changed (renewed by this or another replica). Certificate and key are then served
from one file (`serving.pem`) replaced atomically, so no connection sees a mismatched pair.

gunicorn's threads with `worker.GuardedThreadWorker`: handshakes and request reading happen
non-blocking under `settings.request_timeout`, so stalled clients hold no thread.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication

from certs import CertPaths
from webapp import create_app
from webapp.certificates import SERVING_PEM
from webapp.settings import WebappSettings
from webapp.worker import GuardedThreadWorker

log = logging.getLogger(__name__)


# TLS 1.2 suites: ECDHE key exchange with an AEAD cipher only. OpenSSL's default also offered two
# CBC suites (ECDHE-ECDSA-AES128-SHA256/AES256-SHA384; issue 20, defect 8). TLS 1.3's are all AEAD.
TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL"


def _ssl_context(config: Any, default_factory: Any) -> ssl.SSLContext:
    context: ssl.SSLContext = default_factory()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(TLS12_CIPHERS)
    return context


# How long a kept-alive connection may sit idle between two requests. The API server's webhook
# client keeps an idle connection for 90 s (client-go's transport takes net/http's default
# IdleConnTimeout) and does not retry a POST on a reused connection the server has just closed:
# with gunicorn's default of 2 s, a review sent as the server closed the connection failed with
# "write: broken pipe" and the pod webhook failed open, leaving a spread pod ungated (seen in CI).
# Longer than the client's idle time, the client always closes first. A kept-alive connection
# holds no thread, and a flood of them is shed oldest first (`worker.py`).
KEEPALIVE_SECONDS = 120


class _Server(BaseApplication):  # type: ignore[misc]
    def __init__(self, settings: WebappSettings) -> None:
        self.settings = settings
        super().__init__()

    def load_config(self) -> None:
        s = self.settings
        binds = [f"{s.host}:{s.port}"] + ([f"{s.host}:{s.dashboard_port}"] if s.dashboard_port else [])
        self.cfg.set("bind", binds)  # the dashboard's own port: webapp/access.py routes by listener
        self.cfg.set("workers", s.workers)
        self.cfg.set("worker_class", "webapp.worker.GuardedThreadWorker")
        self.cfg.set("threads", 4)
        self.cfg.set("accesslog", None)
        self.cfg.set("loglevel", "warning")
        self.cfg.set("graceful_timeout", 10)
        self.cfg.set("keepalive", KEEPALIVE_SECONDS)
        if s.cert_secret and s.cert_dir:
            self.cfg.set("certfile", str(Path(s.cert_dir) / SERVING_PEM))
            self.cfg.set("ssl_context", _ssl_context)
            self.cfg.set("when_ready", lambda arbiter: _start_rotation(s))
        elif s.cert_dir:
            paths = CertPaths.in_dir(s.cert_dir)
            for p in (paths.cert, paths.key):
                if not Path(p).is_file():
                    raise SystemExit(f"karpy webapp: {p} is missing; run `karpy certs generate --dir {s.cert_dir}`")
            self.cfg.set("certfile", str(paths.cert))
            self.cfg.set("keyfile", str(paths.key))
            self.cfg.set("ssl_context", _ssl_context)

    def load(self) -> Any:
        app = create_app(self.settings)
        # In the worker (after the fork): start reading the cluster now, not on the first page view.
        start = getattr(app.extensions["karpy_dashboard"], "start", None)
        if start is not None:
            start()
        return app


def cert_spec(settings: WebappSettings) -> Any:
    from webapp.certificates import CertSpec

    return CertSpec(
        secret=settings.cert_secret,
        namespace=settings.cert_namespace,
        hosts=settings.cert_hosts,
        mutating=settings.mutating_webhooks,
        validating=settings.validating_webhooks,
    )


def bootstrap_certificates(settings: WebappSettings) -> bool:
    """Bring the Secret and caBundles up to date and write the serving files; True if they changed."""
    from controller.kube.client import KubeClient
    from webapp.certificates import ensure

    assert settings.cert_dir
    bundle = ensure(KubeClient(settings.kubeconfig or None), cert_spec(settings), time.time())
    current = Path(settings.cert_dir) / "tls.crt"
    if current.is_file() and current.read_bytes() == bundle.cert:
        return False
    bundle.write(Path(settings.cert_dir))
    return True


def _start_rotation(settings: WebappSettings) -> None:
    def loop() -> None:
        while True:
            time.sleep(settings.cert_check_seconds)
            try:
                if bootstrap_certificates(settings):
                    log.warning("serving certificate renewed; new connections get it")
            except Exception as err:  # keep serving the current certificate; retry later
                log.warning("checking the certificate secret: %s", err)

    threading.Thread(target=loop, name="karpy-cert-rotation", daemon=True).start()


def serve(settings: WebappSettings) -> None:
    """Run gunicorn in the foreground until it is signalled."""
    GuardedThreadWorker.request_timeout = settings.request_timeout
    GuardedThreadWorker.max_body = settings.max_body_bytes
    from controller.kube.errors import KubeError
    from webapp.certificates import CertificateError

    if settings.cert_secret:
        try:
            bootstrap_certificates(settings)
        except (KubeError, CertificateError, OSError) as err:
            where = f"{settings.cert_namespace}/{settings.cert_secret}"
            raise SystemExit(f"karpy webapp: certificate secret {where}: {err}") from None
        print(f"karpy webapp: certificate from secret {settings.cert_namespace}/{settings.cert_secret}", flush=True)
    scheme = "https" if settings.cert_dir else "http"
    print(f"karpy webapp listening on {scheme}://{settings.host}:{settings.port}", flush=True)
    if settings.dashboard_port:
        auth = " (Kubernetes authorization)" if settings.dashboard_auth == "kubernetes" else ""
        print(f"karpy dashboard on {scheme}://{settings.host}:{settings.dashboard_port}{auth}", flush=True)
    _Server(settings).run()
