"""Admission webhook views: `POST /webhooks/mutate` and `POST /webhooks/validate`.

Thin: read the body, hand it to `controller.apis.admission.review`, answer its JSON.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from controller.apis.admission import review

bp = Blueprint("admission", __name__)


def _answer(mutate: bool) -> tuple[Response, int]:
    status, body = review(request.get_data(cache=False), mutate=mutate)
    return jsonify(body), status


@bp.post("/webhooks/mutate")
def mutate() -> tuple[Response, int]:
    return _answer(mutate=True)


@bp.post("/webhooks/validate")
def validate() -> tuple[Response, int]:
    return _answer(mutate=False)
