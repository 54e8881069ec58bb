"""The dashboard's only ways to read: the kube API (get/list/watch) and the controller's GET API.

`ReadOnlyKube` wraps karpy's `KubeClient` and exposes reads only — there is no method that
could create, patch or delete, so no view can write even by mistake. `ControllerAPI` GETs the
controller's JSON answers (`controller/httpserver.py`) with a short timeout and says plainly
why when the controller cannot be reached.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import urllib3

from controller.kube.client import KubeClient, ListResult, Obj, WatchEvent
from controller.kube.resources import Kind

log = logging.getLogger(__name__)

MAX_ANSWER_BYTES = 64 << 20  # the decision log and 5,000 nodes' outlooks are a few MiB


class KubeReads(Protocol):
    def list(self, kind: Kind, limit: int = 0, continue_token: str = "") -> ListResult: ...

    def watch(self, kind: Kind, resource_version: str, timeout_seconds: int = 60) -> Iterator[WatchEvent]: ...

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Obj: ...


class ReadOnlyKube:
    """get, list and watch — nothing else. The client is made on first use, so the webapp may
    start before the cluster (or its kubeconfig) exists; the informers retry until it does."""

    def __init__(self, kubeconfig: str | None, timeout: float = 10.0) -> None:
        self._kubeconfig, self._timeout = kubeconfig, timeout
        self._client: KubeClient | None = None
        self._lock = threading.Lock()

    def _kube(self) -> KubeClient:
        with self._lock:
            if self._client is None:
                if self._kubeconfig and not Path(self._kubeconfig).is_file():
                    raise FileNotFoundError(f"kubeconfig {self._kubeconfig} does not exist (yet)")
                self._client = KubeClient(self._kubeconfig, timeout=self._timeout)
            return self._client

    def list(self, kind: Kind, limit: int = 0, continue_token: str = "") -> ListResult:
        return self._kube().list(kind, limit, continue_token)

    def watch(self, kind: Kind, resource_version: str, timeout_seconds: int = 60) -> Iterator[WatchEvent]:
        return self._kube().watch(kind, resource_version, timeout_seconds)

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Obj:
        return self._kube().get(kind, name, namespace)

    def bearer(self) -> str:
        """The webapp's own token, shown to the controller's API when it checks (its `--api-auth`)."""
        return self._kube().bearer()


def _bounded(resp: Any, limit: int, deadline: float) -> bytes:
    """At most `limit` + 1 bytes of `resp`, read before `deadline`: whoever holds the Lease can
    neither exhaust the webapp's memory nor hold its thread by dripping (issue 20, defect 8)."""
    body = bytearray()
    while len(body) <= limit:
        if time.monotonic() > deadline:
            raise ControllerError("the controller's answer took too long")
        chunk = resp.read(64 * 1024)
        if not chunk:
            break
        body += chunk
    return bytes(body)


def _reason(body: bytes) -> str:
    """The error a JSON error answer names (e.g. 503 "not configured: …") after ": ", else nothing."""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return ""
    return f": {str(error)[:1024]}" if error else ""


class ControllerError(Exception):
    """The controller could not be reached or answered something unusable (the message says which)."""


class Locator(Protocol):
    """Where the controller replica to ask is now (e.g. `leader.LeaderLocator`)."""

    def __call__(self) -> str: ...

    def forget(self) -> None: ...


class ControllerAPI:
    """GET the controller's API at `base_url` — or, with a `locate`, at the URL it names (the
    leader), falling back to `base_url` for the request when that one cannot be reached."""

    def __init__(
        self,
        base_url: str,
        timeout: float = 2.0,
        locate: Locator | None = None,
        token: Callable[[], str] | None = None,
    ) -> None:
        self.base_url, self.timeout, self.locate, self.token = base_url, timeout, locate, token
        self._http = urllib3.PoolManager(num_pools=4, maxsize=8)

    def get(self, path: str) -> Any:
        return self._ask(path, self.timeout, keep_4xx=False)[1]

    def answer(self, path: str, timeout: float) -> tuple[int, Any]:
        """GET `path` within `timeout` seconds, keeping a 4xx answer (status, its JSON) instead of
        raising: the explain pages show the controller's own "not found" or "bad request"."""
        return self._ask(path, timeout, keep_4xx=True)

    def compute(self, path: str, body: bytes, timeout: float) -> tuple[int, Any]:
        """POST `body` to a path that only computes (`/api/v1/what-if`), keeping a 4xx answer."""
        return self._ask(path, timeout, keep_4xx=True, body=body)

    def _ask(self, path: str, timeout: float, keep_4xx: bool, body: bytes | None = None) -> tuple[int, Any]:
        base = self.locate() if self.locate is not None else self.base_url
        if base != self.base_url:
            try:
                return self._get(base, path, timeout, keep_4xx, body)
            except ControllerError as err:
                log.debug("asking the controller leader at %s: %s; asking %s", base, err, self.base_url)
                if self.locate is not None:
                    self.locate.forget()
        return self._get(self.base_url, path, timeout, keep_4xx, body)

    def _headers(self) -> dict[str, str]:
        try:
            token = self.token() if self.token is not None else ""
        except Exception as err:  # no credentials (yet): ask without; a checking controller answers 401
            log.debug("reading the webapp's token: %s", err)
            token = ""
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _get(self, base: str, path: str, timeout: float, keep_4xx: bool, sent: bytes | None = None) -> tuple[int, Any]:
        url = base.rstrip("/") + path
        try:
            resp = self._http.request(
                "GET" if sent is None else "POST", url, body=sent, headers=self._headers(),
                timeout=urllib3.Timeout(total=timeout), retries=False, preload_content=False,
            )  # fmt: skip
            try:
                if resp.status != 200 and not (keep_4xx and 400 <= resp.status < 500):
                    said = _reason(_bounded(resp, 4096, time.monotonic() + timeout))
                    raise ControllerError(f"the controller answered HTTP {resp.status} for {path}{said}")
                body = _bounded(resp, MAX_ANSWER_BYTES, time.monotonic() + timeout)
            finally:
                resp.release_conn()
        except urllib3.exceptions.HTTPError as err:
            raise ControllerError(f"the controller at {base} is unreachable ({type(err).__name__})") from err
        if len(body) > MAX_ANSWER_BYTES:
            raise ControllerError(f"the controller's answer for {path} is over {MAX_ANSWER_BYTES >> 20} MiB")
        try:
            return resp.status, json.loads(body)
        except ValueError as err:
            raise ControllerError(f"the controller answered invalid JSON for {path}") from err
