"""The dashboard's JSON API under `/api/v1/` (GET only): the same data the HTML pages render.

Each answer is `{"status": {...}, "data": {...}}`; `status` says whether the cluster view is
synced and whether the controller could be asked (`controllerError` says why not). A detail
that cannot be found while the cluster view is not synced answers 503 (`error` says why), not 404.
"""

from __future__ import annotations

from flask import Blueprint, Response, abort, jsonify

from webapp.blueprints.dashboard import args, read, status, why_missing
from webapp.dashboard.nodes import QueryError, node_page, nodes_page
from webapp.dashboard.overview import decisions_page, overview_page
from webapp.dashboard.pending import pending_page
from webapp.dashboard.provisioners import provisioner_page, provisioners_page
from webapp.dashboard.source import DashboardInputs

bp = Blueprint("api", __name__, url_prefix="/api/v1")


@bp.get("/overview")
def overview() -> Response:
    inputs = read()
    return jsonify(status=status(inputs), data=overview_page(inputs))


@bp.get("/nodes")
def nodes() -> Response:
    inputs = read()
    try:
        data = nodes_page(inputs, args())
    except QueryError as err:
        abort(400, description=str(err))
    return jsonify(status=status(inputs), data=data)


def _unavailable(inputs: DashboardInputs, message: str) -> tuple[Response, int, dict[str, str]]:
    return jsonify(status=status(inputs), error=message), 503, {"Retry-After": "10"}


@bp.get("/nodes/<name>")
def node(name: str) -> Response | tuple[Response, int, dict[str, str]]:
    inputs = read()
    data = node_page(inputs, name)
    if data is None:
        return _unavailable(inputs, why_missing(inputs, f"node {name}"))
    return jsonify(status=status(inputs), data=data)


@bp.get("/provisioners")
def provisioners() -> Response:
    inputs = read()
    return jsonify(status=status(inputs), data=provisioners_page(inputs))


@bp.get("/provisioners/<name>")
def provisioner(name: str) -> Response | tuple[Response, int, dict[str, str]]:
    inputs = read()
    data = provisioner_page(inputs, name)
    if data is None:
        return _unavailable(inputs, why_missing(inputs, f"provisioner {name}"))
    return jsonify(status=status(inputs), data=data)


@bp.get("/pods/pending")
def pending() -> Response:
    inputs = read()
    return jsonify(status=status(inputs), data=pending_page(inputs))


@bp.get("/decisions")
def decisions() -> Response:
    inputs = read()
    return jsonify(status=status(inputs), data=decisions_page(inputs, args()))
