"""karpy's web application: admission webhooks and health endpoints.

`create_app(settings=None)` is the Flask application factory; it needs no cluster and no
certificates. Views are thin: the admission logic is pure and lives in `controller.apis`.
"""

from __future__ import annotations

import logging

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from webapp.settings import WebappSettings

log = logging.getLogger(__name__)


def create_app(settings: WebappSettings | None = None) -> Flask:
    """Build the Flask app; every error answers JSON and nothing answers HTTP 500."""
    from webapp.blueprints.admission import bp as admission_bp
    from webapp.blueprints.health import bp as health_bp

    settings = settings or WebappSettings()
    app = Flask(__name__)
    app.config["KARPY_SETTINGS"] = settings
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.register_blueprint(admission_bp)
    app.register_blueprint(health_bp)

    @app.errorhandler(HTTPException)
    def http_error(err: HTTPException) -> tuple[Response, int]:
        code = err.code or 400
        if code >= 500:
            code = 503
        return jsonify(error=err.description or err.name), code

    @app.errorhandler(Exception)
    def unexpected(err: Exception) -> tuple[Response, int]:
        log.exception("request failed: %s", err)
        return jsonify(error=f"the request could not be processed: {type(err).__name__}"), 400

    return app
