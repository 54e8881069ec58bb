"""karpy's web application: admission webhooks, health endpoints and the read-only dashboard.

`create_app(settings=None)` is the Flask application factory; it needs no cluster and no
certificates (without `--kubeconfig` or a service account the dashboard says it has no cluster
to read). Views are thin: the admission logic is pure and lives in `controller.apis`; the
dashboard's data is built by the pure modules of `webapp/dashboard/` from a read-only source.
Templates are the top-level `templates/` folder (installed under `<prefix>/share/karpy/templates`).
Every answer carries a Content-Security-Policy without inline scripts.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

from flask import Flask, Response, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from controller.kube.access import KubeAccess
from webapp.settings import WebappSettings

log = logging.getLogger(__name__)

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
JSON_PREFIXES = ("/api/", "/webhooks/", "/healthz", "/readyz")


def templates_dir(configured: str | None = None) -> Path:
    """`configured`, else `templates/` beside the package (a checkout), else the installed copy."""
    if configured:
        return Path(configured)
    checkout = Path(__file__).resolve().parent.parent / "templates"
    return checkout if checkout.is_dir() else Path(sys.prefix) / "share" / "karpy" / "templates"


def _default_source(settings: WebappSettings) -> object:
    from controller.clock import SystemClock
    from webapp.dashboard.common import cluster_cost
    from webapp.dashboard.leader import LeaderLocator
    from webapp.dashboard.reader import ControllerAPI, ReadOnlyKube
    from webapp.dashboard.source import DashboardSource

    kube = ReadOnlyKube(settings.kubeconfig) if settings.reads_cluster else None
    api = None
    if settings.controller_url:
        locate = None
        if settings.controller_lease and kube is not None:
            locate = LeaderLocator(kube, settings.controller_lease, settings.controller_url, time.monotonic)
        api = ControllerAPI(settings.controller_url, locate=locate, token=kube.bearer if kube is not None else None)
    return DashboardSource(kube, api, SystemClock(), cluster_cost)


def create_app(
    settings: WebappSettings | None = None, dashboard_source: object | None = None, access: KubeAccess | None = None
) -> Flask:
    """Build the Flask app; every error answers JSON (or an HTML page) and nothing answers HTTP 500.

    `dashboard_source` (a `webapp.dashboard.source.Source`) replaces the one built from settings;
    `access` (a `controller.kube.access.KubeAccess`) the dashboard's reviewer (`webapp/access.py`).
    """
    from webapp import access as guard
    from webapp.blueprints.admission import bp as admission_bp
    from webapp.blueprints.api import bp as api_bp
    from webapp.blueprints.dashboard import bp as dashboard_bp
    from webapp.blueprints.explain import bp as explain_bp
    from webapp.blueprints.health import bp as health_bp

    settings = settings or WebappSettings()
    app = Flask(__name__, template_folder=str(templates_dir(settings.templates_dir)))
    app.config["KARPY_SETTINGS"] = settings
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.extensions["karpy_dashboard"] = dashboard_source or _default_source(settings)
    guard.install(app, settings, access if access is not None else guard.default_access(settings))
    app.register_blueprint(admission_bp)
    app.register_blueprint(health_bp)
    app.register_blueprint(api_bp)
    app.register_blueprint(dashboard_bp)
    app.register_blueprint(explain_bp)

    @app.after_request
    def headers(resp: Response) -> Response:
        resp.headers["Content-Security-Policy"] = CSP
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["Referrer-Policy"] = "no-referrer"
        resp.headers["X-Frame-Options"] = "DENY"
        return resp

    def answer(code: int, message: str) -> tuple[Response | str, int]:
        if request.path.startswith(JSON_PREFIXES) or request.method != "GET":
            return jsonify(error=message), code
        try:
            return render_template("error.html", code=code, message=message, status=None, nav=""), code
        except Exception as err:  # a broken template must not turn an error page into a 500
            log.error("rendering the error page: %s", err)
            return jsonify(error=message), code

    @app.errorhandler(HTTPException)
    def http_error(err: HTTPException) -> tuple[Response | str, int]:
        code = err.code or 400
        if code >= 500:
            code = 503
        return answer(code, err.description or err.name)

    @app.errorhandler(Exception)
    def unexpected(err: Exception) -> tuple[Response | str, int]:
        if type(err).__module__.startswith("gunicorn.http"):  # a body gunicorn cannot parse: the client's fault
            log.warning("bad request body: %s", str(err)[:200])
            return answer(400, f"bad request: {type(err).__name__}")
        log.exception("request failed: %s", err)
        return answer(503, f"the request could not be processed: {type(err).__name__}")

    return app
