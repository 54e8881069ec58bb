"""The dashboard's only ways to read: the kube API (get/list/watch) and the controller's GET API.

`ReadOnlyKube` wraps karpy's `KubeClient` and exposes reads only — there is no method that
could create, patch or delete, so no view can write even by mistake. `ControllerAPI` GETs the
controller's JSON answers (`controller/httpserver.py`) with a short timeout and says plainly
why when the controller cannot be reached.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import urllib3

from controller.kube.client import KubeClient, ListResult, Obj, WatchEvent
from controller.kube.resources import Kind


class KubeReads(Protocol):
    def list(self, kind: Kind) -> ListResult: ...

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

    def list(self, kind: Kind) -> ListResult:
        return self._kube().list(kind)

    def watch(self, kind: Kind, resource_version: str, timeout_seconds: int = 60) -> Iterator[WatchEvent]:
        return self._kube().watch(kind, resource_version, timeout_seconds)

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Obj:
        return self._kube().get(kind, name, namespace)


class ControllerError(Exception):
    """The controller could not be reached or answered something unusable (the message says which)."""


class ControllerAPI:
    def __init__(self, base_url: str, timeout: float = 2.0) -> None:
        self.base_url, self.timeout = base_url, timeout
        self._http = urllib3.PoolManager(num_pools=2, maxsize=8)

    def get(self, path: str) -> Any:
        url = self.base_url.rstrip("/") + path
        try:
            resp = self._http.request("GET", url, timeout=urllib3.Timeout(total=self.timeout), retries=False)
        except urllib3.exceptions.HTTPError as err:
            raise ControllerError(f"the controller at {self.base_url} is unreachable ({type(err).__name__})") from err
        if resp.status != 200:
            raise ControllerError(f"the controller answered HTTP {resp.status} for {path}")
        try:
            return json.loads(resp.data)
        except ValueError as err:
            raise ControllerError(f"the controller answered invalid JSON for {path}") from err
