"""The dashboard's HTML pages (GET only; every other method answers 405).

Thin: read one `DashboardInputs` from the app's dashboard source, build the page's data with the pure
modules in `webapp/dashboard/`, render the template of the same name. The JSON API
(`api.py`) returns the very same data. Templates extend `base.html`; autoescape stays on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Blueprint, abort, current_app, render_template, request
from markupsafe import Markup

from webapp.dashboard import common
from webapp.dashboard.nodes import COLUMNS, QueryError, node_page, nodes_page
from webapp.dashboard.overview import decisions_page, overview_page
from webapp.dashboard.pending import pending_page
from webapp.dashboard.provisioners import provisioner_page, provisioners_page
from webapp.dashboard.source import DashboardInputs, Source

bp = Blueprint("dashboard", __name__)


def read() -> DashboardInputs:
    source: Source = current_app.extensions["karpy_dashboard"]
    return source.read()


def status(inputs: DashboardInputs) -> dict[str, Any]:
    """What every page says about its sources: the controller reachable or not, the cluster synced or not."""
    return {
        "time": common.iso(inputs.snapshot.now),
        "synced": inputs.snapshot.synced,
        "problem": inputs.problem,
        "controllerReachable": not inputs.controller.error,
        "controllerError": inputs.controller.error,
        "cloudProblem": inputs.controller.cloud_problem,
        "settingsProblem": inputs.controller.settings_problem,
    }


def why_missing(inputs: DashboardInputs, what: str) -> str:
    """For a detail page whose object is missing: answers 404 when its absence is known, else says
    why `what` cannot be looked up now. While the cluster view is not synced (the API server
    unreachable), missing means "can't tell", never "does not exist" (issue 20, defect 6) — the
    caller answers 503 with that reason and the banner."""
    if inputs.snapshot.synced:
        abort(404, description=f"{what} not found")
    return f"{what} cannot be looked up now: {inputs.problem or 'the cluster view is not synced'}"


def args() -> dict[str, str]:
    return {k: v for k, v in request.args.items()}


@bp.app_template_filter("cpu")
def _cpu(value: float) -> str:
    return common.fmt_cpu(value)


@bp.app_template_filter("bytes")
def _bytes(value: float) -> str:
    return common.fmt_bytes(value)


@bp.app_template_filter("duration")
def _duration(value: float) -> str:
    return common.fmt_duration(value)


@bp.app_template_filter("price")
def _price(value: float | None) -> str:
    return common.fmt_price(value)


@bp.app_template_filter("bar")
def _bar(u: dict[str, float], kind: str) -> Markup:
    """requested/allocatable as a <meter> and its text; built here, not in a macro, because the
    nodes table draws three per row (numbers only, so nothing needs escaping)."""
    fmt: Callable[[float], str] = {"cpu": common.fmt_cpu, "memory": common.fmt_bytes}.get(kind, _count)
    text = f"{fmt(u['requested'])}/{fmt(u['allocatable'])} ({u['fraction'] * 100:.0f}%)"
    return Markup(
        f'<span class="bar"><meter min="0" max="1" low="0.8" high="0.95" optimum="0" value="{u["bar"]}"></meter>'
        f'<span class="barlabel">{text}</span></span>'
    )


def _count(value: float) -> str:
    return str(int(value))


@bp.app_template_filter("pct")
def _pct(value: float) -> str:
    return f"{value * 100:.0f}%"


@bp.get("/")
def overview() -> str:
    inputs = read()
    return render_template("overview.html", page=overview_page(inputs), status=status(inputs), nav="overview")


@bp.get("/nodes")
def nodes() -> tuple[str, int] | str:
    inputs = read()
    try:
        page = nodes_page(inputs, args())
    except QueryError as err:
        abort(400, description=str(err))
    return render_template("nodes.html", page=page, columns=COLUMNS, status=status(inputs), nav="nodes")


def _unavailable(inputs: DashboardInputs, message: str) -> tuple[str, int, dict[str, str]]:
    html = render_template("error.html", code=503, message=message, status=status(inputs), nav="")
    return html, 503, {"Retry-After": "10"}


@bp.get("/nodes/<name>")
def node(name: str) -> str | tuple[str, int, dict[str, str]]:
    inputs = read()
    page = node_page(inputs, name)
    if page is None:
        return _unavailable(inputs, why_missing(inputs, f"node {name}"))
    return render_template("node.html", node=page, status=status(inputs), nav="nodes")


@bp.get("/provisioners")
def provisioners() -> str:
    inputs = read()
    return render_template(
        "provisioners.html", page=provisioners_page(inputs), status=status(inputs), nav="provisioners"
    )


@bp.get("/provisioners/<name>")
def provisioner(name: str) -> str | tuple[str, int, dict[str, str]]:
    inputs = read()
    page = provisioner_page(inputs, name)
    if page is None:
        return _unavailable(inputs, why_missing(inputs, f"provisioner {name}"))
    return render_template("provisioner.html", p=page, status=status(inputs), nav="provisioners")


@bp.get("/pods/pending")
def pending() -> str:
    inputs = read()
    return render_template("pending.html", page=pending_page(inputs), status=status(inputs), nav="pending")


@bp.get("/decisions")
def decisions() -> str:
    inputs = read()
    return render_template(
        "decisions.html", page=decisions_page(inputs, args()), status=status(inputs), nav="decisions"
    )
