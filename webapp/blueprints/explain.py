"""The dashboard's explain pages and their JSON (GET only): what removing a node would do, why a
pod is where it is and what it would get now, and what consolidation has saved (`/savings`).

Thin: each view asks the controller once (`DashboardSource.ask`, not cached: the answer is
computed on demand by `controller/explain/`), renders `explain_node.html` / `explain_pod.html` /
`savings.html` or returns the controller's JSON under `/api/v1/explain/…` and `/api/v1/savings`.
The controller's 4xx (an unknown node or pod) is passed on; a controller that cannot be asked is
a 503 that says why.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from flask import Blueprint, Response, abort, current_app, jsonify, render_template, request

from webapp.blueprints.dashboard import read, status
from webapp.dashboard.reader import ControllerError

bp = Blueprint("explain", __name__)

EXPLAIN_TIMEOUT = 20.0  # seconds: an answer runs the scheduler a few times
MAX_MANIFEST = 16 * 1024  # characters of a what-if manifest in the page's query string


def ask(path: str) -> tuple[int, dict[str, Any]]:
    """The controller's (status, JSON) for `path`; 503 with the reason when it cannot be asked."""
    source = current_app.extensions["karpy_dashboard"]
    asking = getattr(source, "ask", None)
    if asking is None:
        return 503, {"error": "this dashboard has no controller to ask"}
    try:
        code, data = asking(path, EXPLAIN_TIMEOUT)
    except ControllerError as err:
        return 503, {"error": str(err)}
    if not isinstance(data, dict):
        return 503, {"error": f"the controller answered {path} in an unexpected shape"}
    return int(code), data


def _node_path(name: str) -> str:
    return f"/api/v1/explain/nodes/{quote(name, safe='')}"


def _pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/explain/pods/{quote(namespace, safe='')}/{quote(name, safe='')}"


def _page(template: str, path: str, nav: str) -> str:
    code, data = ask(path)
    if code != 200:
        abort(code if code < 500 else 503, description=str(data.get("error") or f"HTTP {code}"))
    inputs = read()
    return render_template(template, x=data, status=status(inputs), nav=nav)


def _json(path: str) -> tuple[Response, int]:
    code, data = ask(path)
    return jsonify(data), code if code < 500 else 503


@bp.get("/explain/nodes/<name>")
def node(name: str) -> str:
    return _page("explain_node.html", _node_path(name), "nodes")


@bp.get("/explain/pods/<namespace>/<name>")
def pod(namespace: str, name: str) -> str:
    return _page("explain_pod.html", _pod_path(namespace, name), "pending")


@bp.get("/api/v1/explain/nodes/<name>")
def node_json(name: str) -> tuple[Response, int]:
    return _json(_node_path(name))


@bp.get("/api/v1/explain/pods/<namespace>/<name>")
def pod_json(namespace: str, name: str) -> tuple[Response, int]:
    return _json(_pod_path(namespace, name))


@bp.get("/savings")
def savings() -> str:
    return _page("savings.html", "/api/v1/savings", "savings")


@bp.get("/api/v1/savings")
def savings_json() -> tuple[Response, int]:
    return _json("/api/v1/savings")


@bp.get("/what-if")
def what_if() -> str:
    """A form (GET: the manifest travels in the query string) and, with a manifest, the
    controller's what-if answer for it: what karpy would launch, changing nothing."""
    manifest = request.args.get("manifest", "")
    answer: dict[str, Any] | None = None
    error = ""
    if len(manifest) > MAX_MANIFEST:
        error = f"the manifest is over {MAX_MANIFEST} characters: use karpy what-if --pod FILE"
    elif manifest.strip():
        code, data = _compute("/api/v1/what-if", manifest.encode())
        if code == 200:
            answer = data
        else:
            error = str(data.get("error") or f"HTTP {code}")
    inputs = read()
    return render_template("what_if.html", x=answer, manifest=manifest, error=error, status=status(inputs),
                           nav="what-if")  # fmt: skip


def _compute(path: str, body: bytes) -> tuple[int, dict[str, Any]]:
    source = current_app.extensions["karpy_dashboard"]
    computing = getattr(source, "compute", None)
    if computing is None:
        return 503, {"error": "this dashboard has no controller to ask"}
    try:
        code, data = computing(path, body, EXPLAIN_TIMEOUT)
    except ControllerError as err:
        return 503, {"error": str(err)}
    if not isinstance(data, dict):
        return 503, {"error": f"the controller answered {path} in an unexpected shape"}
    return int(code), data
