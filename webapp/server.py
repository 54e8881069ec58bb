"""Serve the webapp under gunicorn with TLS 1.2 or newer (`karpy webapp`)."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication

from certs import CertPaths
from webapp import create_app
from webapp.settings import WebappSettings


def _ssl_context(config: Any, default_factory: Any) -> ssl.SSLContext:
    context: ssl.SSLContext = default_factory()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


class _Server(BaseApplication):  # type: ignore[misc]
    def __init__(self, settings: WebappSettings) -> None:
        self.settings = settings
        super().__init__()

    def load_config(self) -> None:
        s = self.settings
        self.cfg.set("bind", f"{s.host}:{s.port}")
        self.cfg.set("workers", s.workers)
        self.cfg.set("worker_class", "gthread")
        self.cfg.set("threads", 4)
        self.cfg.set("accesslog", None)
        self.cfg.set("loglevel", "warning")
        self.cfg.set("graceful_timeout", 10)
        if s.cert_dir:
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


def serve(settings: WebappSettings) -> None:
    """Run gunicorn in the foreground until it is signalled."""
    scheme = "https" if settings.cert_dir else "http"
    print(f"karpy webapp listening on {scheme}://{settings.host}:{settings.port}", flush=True)
    _Server(settings).run()
