"""Who may read karpy's dashboard and the controller's API: Kubernetes' own authentication and
authorization, as kube-rbac-proxy does it (issue 20, defect 7).

A request carries a bearer token; `KubeAccess.check(token)` asks the API server
`TokenReview` (who is this?) and then `SubjectAccessReview` (may they `get` the documented
resource `dashboard` in API group `karpy.sh`?). RBAC grants that resource like any other — the
chart ships the ClusterRole `<release>-dashboard-viewer` with exactly that rule; the API group
need not exist, RBAC does not look. Answers are cached per token digest (allowed 60 s, refused
10 s, at most 1,000 tokens), so a page refresh costs no review. An API server that cannot be
asked gives `UNAVAILABLE` (503), never access.

Neighbours: `client.py` (`KubeClient.create` posts the reviews); the webapp (`webapp/access.py`)
and the controller's HTTP server use it.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from controller.kube.errors import KubeError
from controller.kube.resources import Kind

log = logging.getLogger(__name__)

TOKENREVIEWS = Kind("tokenreviews", "authentication.k8s.io/v1", "tokenreviews", False)
SUBJECTACCESSREVIEWS = Kind("subjectaccessreviews", "authorization.k8s.io/v1", "subjectaccessreviews", False)
GROUP, RESOURCE, VERB = "karpy.sh", "dashboard", "get"
ALLOWED_TTL, REFUSED_TTL, MAX_CACHED = 60.0, 10.0, 1000
MAX_TOKEN_BYTES = 16 * 1024


class Reviews(Protocol):
    def create(self, kind: Kind, obj: Mapping[str, Any], namespace: str | None = None) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Verdict:
    status: int  # 200 allowed, 401 no or bad token, 403 not allowed, 503 the API server cannot tell
    user: str = ""
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.status == 200


UNAUTHENTICATED = Verdict(401, reason="a bearer token is required (Authorization: Bearer <token>)")


def bearer(header: str | None) -> str:
    """The token of an `Authorization: Bearer <token>` header ("" when absent or malformed)."""
    scheme, _, token = (header or "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_BYTES or not token.isascii():
        return ""
    return token


class KubeAccess:
    def __init__(self, reviews: Reviews, now: Callable[[], float]) -> None:
        self._reviews, self._now = reviews, now
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, tuple[float, Verdict]] = OrderedDict()

    def check(self, token: str) -> Verdict:
        if not token:
            return UNAUTHENTICATED
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self._now()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and cached[0] > now:
                return cached[1]
        verdict = self._review(token)
        if verdict.status != 503:  # "cannot tell" is asked again next time
            ttl = ALLOWED_TTL if verdict.allowed else REFUSED_TTL
            with self._lock:
                self._cache[key] = (now + ttl, verdict)
                self._cache.move_to_end(key)
                while len(self._cache) > MAX_CACHED:
                    self._cache.popitem(last=False)
        return verdict

    def _review(self, token: str) -> Verdict:
        try:
            ask = {"apiVersion": TOKENREVIEWS.group_version, "kind": "TokenReview", "spec": {"token": token}}
            review = self._reviews.create(TOKENREVIEWS, ask)
            status = review.get("status") or {}
            if not status.get("authenticated"):
                return Verdict(401, reason="the token is not valid")
            user = status.get("user") or {}
            name = str(user.get("username") or "")
            sar = {
                "apiVersion": SUBJECTACCESSREVIEWS.group_version,
                "kind": "SubjectAccessReview",
                "spec": {
                    "user": name,
                    "uid": str(user.get("uid") or ""),
                    "groups": [str(g) for g in user.get("groups") or []],
                    "extra": {str(k): [str(x) for x in v] for k, v in (user.get("extra") or {}).items()},
                    "resourceAttributes": {"group": GROUP, "resource": RESOURCE, "verb": VERB},
                },
            }
            decided = self._reviews.create(SUBJECTACCESSREVIEWS, sar).get("status") or {}
        except (KubeError, OSError, ValueError) as err:
            log.warning("reviewing a dashboard token: %s", err)
            return Verdict(503, reason="the Kubernetes API cannot review the token now")
        if not decided.get("allowed"):
            return Verdict(403, name, f"{name} may not {VERB} {RESOURCE}.{GROUP} (grant it with RBAC)")
        return Verdict(200, name)
