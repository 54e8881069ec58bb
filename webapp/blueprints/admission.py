"""Admission webhook views: `POST /webhooks/mutate` and `POST /webhooks/validate`.

Thin: read the body, hand it to `controller.apis.admission.review`, answer its JSON. A body
over the limit is refused with 413, with or without a Content-Length (a chunked one is read up
to one byte past the limit, never silently cut).
"""

from __future__ import annotations

from flask import Blueprint, Response, abort, current_app, jsonify, request

from controller.apis.admission import review

bp = Blueprint("admission", __name__)


def _body() -> bytes:
    limit = current_app.config.get("MAX_CONTENT_LENGTH")
    if request.content_length is None and limit and request.environ.get("wsgi.input_terminated"):
        data: bytes = request.environ["wsgi.input"].read(limit + 1)
        if len(data) > limit:
            abort(413)
        return data
    return request.get_data(cache=False)


def _answer(mutate: bool) -> tuple[Response, int]:
    status, body = review(_body(), mutate=mutate)
    return jsonify(body), status


@bp.post("/webhooks/mutate")
def mutate() -> tuple[Response, int]:
    return _answer(mutate=True)


@bp.post("/webhooks/validate")
def validate() -> tuple[Response, int]:
    return _answer(mutate=False)
