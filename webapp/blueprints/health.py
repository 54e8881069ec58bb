"""Liveness and readiness: `/healthz` and `/readyz`."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> Response:
    return jsonify(status="ok")


@bp.get("/readyz")
def readyz() -> Response:
    return jsonify(status="ok")
