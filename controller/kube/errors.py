"""Typed errors of the Kubernetes adapter: callers branch on the type, not the HTTP status.

`ConflictError` (409) means "requeue" (someone changed the object first); `GoneError` (410) means
a watch's resourceVersion is too old and the caller must re-list; `TooManyRequestsError` (429) on
an eviction means a PodDisruptionBudget does not allow it now.
"""

from __future__ import annotations


class KubeError(Exception):
    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class NotFoundError(KubeError):
    pass


class ConflictError(KubeError):
    pass


class AlreadyExistsError(ConflictError):
    pass


class GoneError(KubeError):
    pass


class TooManyRequestsError(KubeError):
    pass


class ConnectionLostError(KubeError):
    """The API server could not be reached or dropped the connection."""


def from_status(status: int, message: str, reason: str = "") -> KubeError:
    if status == 404:
        return NotFoundError(message, status)
    if status == 409:
        return AlreadyExistsError(message, status) if reason == "AlreadyExists" else ConflictError(message, status)
    if status == 410:
        return GoneError(message, status)
    if status == 429:
        return TooManyRequestsError(message, status)
    return KubeError(message, status)
