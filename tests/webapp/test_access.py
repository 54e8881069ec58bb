"""The webhook port serves only the webhooks; the dashboard port only the dashboard, behind
Kubernetes' authorization when asked (issue 20, defect 7)."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from controller.clock import FakeClock
from controller.kube.access import KubeAccess
from tests.controller.kube.test_access import Reviews
from tests.webapp.test_dashboard_views import cluster
from webapp import create_app
from webapp.access import COOKIE
from webapp.settings import WebappSettings

WEBHOOKS, DASHBOARD = 8443, 8444
OBJECT = {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": "a"}, "spec": {}}
KIND = {"group": "karpenter.sh", "version": "v1alpha5", "kind": "Provisioner"}
REVIEW = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
          "request": {"uid": "u", "operation": "CREATE", "kind": KIND, "object": OBJECT}}  # fmt: skip


@pytest.fixture
def client() -> FlaskClient:
    settings = WebappSettings(port=WEBHOOKS, dashboard_port=DASHBOARD, dashboard_auth="kubernetes")
    access = KubeAccess(Reviews({"good": "alice", "other": "bob"}, {"alice"}), FakeClock().now)
    return create_app(settings, dashboard_source=cluster(), access=access).test_client()


def call(client: FlaskClient, method: str, path: str, port: int, token: str = "", **kw: Any) -> TestResponse:
    headers = {"Accept": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    headers.update(kw.pop("headers", {}))
    return client.open(path, method=method, headers=headers, environ_overrides={"SERVER_PORT": str(port)}, **kw)


def test_the_webhook_port_serves_the_webhooks_and_probes_only(client: FlaskClient) -> None:
    assert call(client, "POST", "/webhooks/validate", WEBHOOKS, json=REVIEW).status_code == 200
    assert call(client, "GET", "/healthz", WEBHOOKS).status_code == 200
    for path in ("/", "/nodes", "/api/v1/nodes", "/login", "/static/dashboard.css"):
        resp = call(client, "GET", path, WEBHOOKS, "good")
        assert resp.status_code == 404 and "port 8444" in resp.get_json()["error"], path


def test_the_dashboard_port_needs_an_authorized_token(client: FlaskClient) -> None:
    html = call(client, "GET", "/", DASHBOARD, headers={"Accept": "text/html"})
    assert html.status_code == 401 and 'action="/login"' in html.get_data(as_text=True)
    assert html.headers["WWW-Authenticate"].startswith("Bearer")
    assert call(client, "GET", "/api/v1/nodes", DASHBOARD).status_code == 401
    assert call(client, "GET", "/api/v1/nodes", DASHBOARD, "forged").status_code == 401
    refused = call(client, "GET", "/api/v1/nodes", DASHBOARD, "other")
    assert refused.status_code == 403 and "bob may not get dashboard.karpy.sh" in refused.get_json()["error"]
    for path in ("/", "/nodes/n1", "/api/v1/nodes", "/api/v1/provisioners/default"):
        assert call(client, "GET", path, DASHBOARD, "good").status_code == 200, path
    for path in ("/healthz", "/static/dashboard.css", "/login"):
        assert call(client, "GET", path, DASHBOARD).status_code == 200, path
    assert call(client, "POST", "/webhooks/validate", DASHBOARD, "good", json=REVIEW).status_code == 404


def test_the_login_form_keeps_an_authorized_token_in_a_strict_cookie(client: FlaskClient) -> None:
    bad = call(client, "POST", "/login", DASHBOARD, data={"token": "other"})
    assert bad.status_code == 403 and COOKIE not in bad.headers.get("Set-Cookie", "")
    good = call(client, "POST", "/login", DASHBOARD, data={"token": "good"})
    assert good.status_code == 302
    cookie = good.headers["Set-Cookie"]
    assert cookie.startswith(f"{COOKIE}=good") and all(a in cookie for a in ("Secure", "HttpOnly", "SameSite=Strict"))
    assert call(client, "GET", "/api/v1/nodes", DASHBOARD).status_code == 200


def test_without_the_options_one_port_serves_everything_openly() -> None:
    client = create_app(dashboard_source=cluster()).test_client()
    assert client.get("/api/v1/nodes").status_code == 200
    assert client.post("/webhooks/validate", json=REVIEW).status_code == 200
    assert client.get("/login").status_code == 302


@pytest.mark.parametrize(
    ("overrides", "message"),
    [({"dashboard_auth": "basic"}, "--dashboard-auth"), ({"port": 9000, "dashboard_port": 9000}, "must differ")],
)
def test_the_options_are_checked(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WebappSettings.from_env(**overrides)
