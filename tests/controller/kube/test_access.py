"""Bearer token → TokenReview → SubjectAccessReview, cached (issue 20, defect 7). The same against
the real API server: `tests/e2e/test_dashboard_access.py`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from controller.clock import FakeClock
from controller.kube.access import GROUP, RESOURCE, SUBJECTACCESSREVIEWS, TOKENREVIEWS, KubeAccess, bearer
from controller.kube.errors import KubeError
from controller.kube.resources import Kind


class Reviews:
    """An API server that knows `users` (token → name) and lets `viewers` get the dashboard."""

    def __init__(self, users: dict[str, str], viewers: set[str]) -> None:
        self.users, self.viewers = users, viewers
        self.calls: list[str] = []
        self.down = False

    def create(self, kind: Kind, obj: Mapping[str, Any], namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(kind.name)
        if self.down:
            raise KubeError("connection refused")
        if kind == TOKENREVIEWS:
            name = self.users.get(obj["spec"]["token"])
            status = {"authenticated": True, "user": {"username": name, "groups": ["g"]}} if name else {}
            return {"status": status}
        assert kind == SUBJECTACCESSREVIEWS
        attrs = obj["spec"]["resourceAttributes"]
        assert (attrs["group"], attrs["resource"], attrs["verb"]) == (GROUP, RESOURCE, "get")
        return {"status": {"allowed": obj["spec"]["user"] in self.viewers}}


def make() -> tuple[KubeAccess, Reviews, FakeClock]:
    clock = FakeClock()
    reviews = Reviews({"good": "alice", "other": "bob"}, {"alice"})
    return KubeAccess(reviews, clock.now), reviews, clock


def test_a_viewer_is_allowed_others_are_refused() -> None:
    access, _, _ = make()
    assert access.check("good").status == 200 and access.check("good").user == "alice"
    assert access.check("other").status == 403 and "bob may not get dashboard.karpy.sh" in access.check("other").reason
    assert access.check("forged").status == 401
    assert access.check("").status == 401


def test_answers_are_cached_and_expire() -> None:
    access, reviews, clock = make()
    access.check("good")
    access.check("good")
    assert reviews.calls == ["tokenreviews", "subjectaccessreviews"]
    clock.step(61)
    access.check("good")
    assert len(reviews.calls) == 4


def test_an_api_server_that_cannot_answer_is_503_and_not_cached() -> None:
    access, reviews, _ = make()
    reviews.down = True
    assert access.check("good").status == 503
    reviews.down = False
    assert access.check("good").status == 200


@pytest.mark.parametrize(
    ("header", "token"),
    [("Bearer abc", "abc"), ("bearer  abc ", "abc"), ("Basic abc", ""), ("Bearer", ""), (None, ""),
     ("Bearer " + "x" * 20000, ""), ("Bearer tök", "")],
)  # fmt: skip
def test_bearer_header(header: str | None, token: str) -> None:
    assert bearer(header) == token
