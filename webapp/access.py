"""Which port serves what, and who may read the dashboard (issue 20, defect 7).

With `dashboard_port` set (the chart does), the webapp listens on two ports: the webhook port
answers only `/webhooks/*`, `/healthz` and `/readyz` (all else 404), and the dashboard port
answers everything but the webhooks. The listener's port comes from gunicorn (`SERVER_PORT`,
the socket's own address, never the Host header).

With `dashboard_auth = "kubernetes"` every dashboard page and API call needs a Kubernetes
bearer token — `Authorization: Bearer <token>`, or the `karpy_token` cookie that the login form
(`/login`, the one POST) sets — reviewed by `controller.kube.access.KubeAccess`: TokenReview,
then SubjectAccessReview for `get` on `dashboard` in API group `karpy.sh`. Health endpoints and
static assets need none. `karpy dev` runs without it (one port, no login).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from flask import Flask, Response, jsonify, redirect, render_template, request

from controller.kube.access import (
    SUBJECTACCESSREVIEWS,
    TOKENREVIEWS,
    UNAUTHENTICATED,
    KubeAccess,
    Verdict,
    bearer,
)
from controller.kube.resources import Kind
from webapp.settings import WebappSettings

COOKIE = "karpy_token"
WEBHOOK_PATHS = ("/webhooks/", "/healthz", "/readyz")
OPEN_PATHS = ("/healthz", "/readyz", "/static/", "/login")


class ReviewClient:
    """Creates TokenReviews and SubjectAccessReviews — and nothing else — with the webapp's
    credentials (the chart binds `system:auth-delegator`, which allows exactly these two)."""

    def __init__(self, kubeconfig: str | None) -> None:
        from controller.kube.client import KubeClient

        self._client = KubeClient(kubeconfig, timeout=5.0)

    def create(self, kind: Kind, obj: Mapping[str, Any], namespace: str | None = None) -> dict[str, Any]:
        if kind not in (TOKENREVIEWS, SUBJECTACCESSREVIEWS):
            raise ValueError(f"the dashboard's review client creates no {kind.name}")
        return self._client.create(kind, obj)


def default_access(settings: WebappSettings) -> KubeAccess | None:
    if settings.dashboard_auth != "kubernetes":
        return None
    return KubeAccess(ReviewClient(settings.kubeconfig), time.monotonic)


def install(app: Flask, settings: WebappSettings, access: KubeAccess | None) -> None:
    app.extensions["karpy_access"] = access

    @app.before_request
    def guard() -> Any:
        path = request.path
        webhook = path.startswith(WEBHOOK_PATHS[0])
        if settings.dashboard_port:
            on_dashboard_port = request.environ.get("SERVER_PORT") == str(settings.dashboard_port)
            if on_dashboard_port and webhook:
                return jsonify(error="the webhooks are not served on the dashboard's port"), 404
            if not on_dashboard_port and not path.startswith(WEBHOOK_PATHS):
                return jsonify(error=f"the dashboard is served on port {settings.dashboard_port}"), 404
        if access is None or webhook or path.startswith(OPEN_PATHS):
            return None
        token = bearer(request.headers.get("Authorization")) or request.cookies.get(COOKIE, "")
        verdict = access.check(token) if token else UNAUTHENTICATED
        return None if verdict.allowed else refuse(verdict)

    @app.route("/login", methods=["GET", "POST"])
    def login() -> Any:
        if access is None:
            return redirect("/")
        if request.method == "GET":
            return render_template("login.html", status=None, nav="", message=""), 200
        token = request.form.get("token", "").strip()
        verdict = access.check(token) if token else UNAUTHENTICATED
        if not verdict.allowed:
            page = render_template("login.html", status=None, nav="", message=verdict.reason)
            return page, verdict.status
        resp = redirect("/")
        resp.set_cookie(COOKIE, token, max_age=3600, secure=True, httponly=True, samesite="Strict")
        return resp


def refuse(verdict: Verdict) -> tuple[Response | str, int, dict[str, str]]:
    headers = {"WWW-Authenticate": 'Bearer realm="karpy"'} if verdict.status == 401 else {}
    if request.path.startswith("/api/") or request.accept_mimetypes.best != "text/html":
        return jsonify(error=verdict.reason), verdict.status, headers
    if verdict.status == 401:
        return render_template("login.html", status=None, nav="", message=verdict.reason), 401, headers
    page = render_template("error.html", code=verdict.status, message=verdict.reason, status=None, nav="")
    return page, verdict.status, headers
