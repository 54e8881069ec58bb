"""`KubeClient`: the only code that talks HTTP to the Kubernetes API server.

A narrow adapter over plain JSON: objects are dicts exactly as the API server sends them.
Authentication comes from the `kubernetes` package's config loaders (kubeconfig file, in-cluster,
then `$KUBECONFIG`); the token is read through the loader's refresh hook on every request, and a
401 loads the credentials again and retries once (rotated service-account tokens). Requests go
through one urllib3 pool and never follow redirects. Errors are the typed ones of
`errors.py` (a lost connection is `ConnectionLostError`). The `Kube` protocol is what the rest
of karpy depends on; `tests/fakes/kube.py` implements it in memory.

Methods: `list` (whole, or one page: `limit` objects from a `continue_token`, as client-go's
pager asks; an expired token is a `GoneError`), `watch` (yields `WatchEvent`s; raises `GoneError`
on 410 — the caller re-lists), `get`, `create`, `patch` (JSON merge patch, optional `status` subresource),
`replace`, `delete`, `bind` (Binding subresource), `evict` (Eviction API, `policy/v1`), and
`create_event`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

import urllib3

from controller.kube.errors import ConnectionLostError, KubeError, from_status
from controller.kube.resources import EVENTS, PODS, Kind
from controller.metrics import REST_CLIENT_REQUESTS

log = logging.getLogger(__name__)

Obj = dict[str, Any]


@dataclass(frozen=True)
class ListResult:
    items: list[Obj]
    resource_version: str
    continue_token: str = ""  # a page: where the next one starts ("" after the last)


@dataclass(frozen=True)
class WatchEvent:
    type: str  # ADDED | MODIFIED | DELETED | BOOKMARK
    object: Obj


class Kube(Protocol):
    def list(self, kind: Kind, limit: int = 0, continue_token: str = "") -> ListResult: ...

    def watch(self, kind: Kind, resource_version: str, timeout_seconds: int = 60) -> Iterator[WatchEvent]: ...

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Obj: ...

    def create(self, kind: Kind, obj: Mapping[str, Any], namespace: str | None = None) -> Obj: ...

    def patch(
        self,
        kind: Kind,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Obj: ...

    def replace(self, kind: Kind, name: str, obj: Mapping[str, Any], namespace: str | None = None) -> Obj: ...

    def delete(self, kind: Kind, name: str, namespace: str | None = None) -> None: ...

    def bind(self, namespace: str, pod: str, node: str) -> None: ...

    def evict(self, namespace: str, pod: str) -> None: ...

    def create_event(self, namespace: str, event: Mapping[str, Any]) -> None: ...


class KubeClient:
    """The real adapter (see the module docstring)."""

    def __init__(self, kubeconfig: str | None = None, timeout: float = 30.0) -> None:
        self._kubeconfig = kubeconfig
        self._cfg = self._load()
        cfg = self._cfg
        self.host = cfg.host.rstrip("/")
        self._headers = {"Accept": "application/json", "User-Agent": "karpy-controller"}
        self._timeout = timeout
        self._http = urllib3.PoolManager(
            num_pools=4,
            maxsize=32,
            cert_reqs="CERT_REQUIRED" if cfg.verify_ssl else "CERT_NONE",
            ca_certs=cfg.ssl_ca_cert,
            cert_file=cfg.cert_file,
            key_file=cfg.key_file,
            retries=False,
        )

    def _load(self) -> Any:
        from kubernetes import config as kconfig
        from kubernetes.client import Configuration

        cfg = Configuration()
        if self._kubeconfig:
            kconfig.load_kube_config(config_file=self._kubeconfig, client_configuration=cfg)  # type: ignore[no-untyped-call]
        else:
            try:
                kconfig.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
            except kconfig.ConfigException:
                kconfig.load_kube_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        return cfg

    def _auth_headers(self) -> dict[str, str]:
        """Headers with the current token: the config's refresh hook re-reads a rotated in-cluster
        token (every minute) or an expired exec credential on each call."""
        headers = dict(self._headers)
        token = self._cfg.get_api_key_with_prefix("BearerToken") or self._cfg.get_api_key_with_prefix("authorization")
        if token:
            headers["Authorization"] = token
        return headers

    def bearer(self) -> str:
        """This client's current bearer token ("" with certificate credentials), for a karpy peer
        that reviews it (`access.py`)."""
        scheme, _, token = self._auth_headers().get("Authorization", "").partition(" ")
        return token if scheme.lower() == "bearer" else ""

    def _reload_credentials(self) -> bool:
        """After a 401: load the credentials again (a token file rotated since); True if they changed."""
        before = self._auth_headers().get("Authorization")
        try:
            self._cfg = self._load()
        except Exception as err:  # the loaders raise several types; keep the old credentials
            log.warning("reloading credentials: %s", err)
            return False
        return self._auth_headers().get("Authorization") != before

    # Transport -------------------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Obj:
        url = self.host + path + (("?" + urlencode(query)) if query else "")
        data = None if body is None else json.dumps(body).encode()
        for attempt in (1, 2):
            headers = self._auth_headers()
            if data is not None:
                headers["Content-Type"] = content_type
            try:
                # never follow a redirect: the token must not go to another host (and urllib3
                # before 2.5 ignored retries=False on the pool for redirects, CVE-2025-50181)
                resp = self._http.request(
                    method, url, body=data, headers=headers, timeout=self._timeout, redirect=False
                )
            except urllib3.exceptions.HTTPError as err:
                REST_CLIENT_REQUESTS.labels("<error>", method).inc()
                raise ConnectionLostError(f"{method} {path}: {err}") from err
            REST_CLIENT_REQUESTS.labels(str(resp.status), method).inc()
            if resp.status == 401 and attempt == 1 and self._reload_credentials():
                continue
            break
        return _decode(method, path, resp.status, resp.data)

    # Reads -----------------------------------------------------------------------------------

    def version(self) -> str:
        """The apiserver's `gitVersion` (GET /version, allowed to every authenticated client)."""
        return str(self._request("GET", "/version").get("gitVersion", ""))

    def list(self, kind: Kind, limit: int = 0, continue_token: str = "") -> ListResult:
        """Every object of `kind`, or with `limit` one page of at most that many (from
        `continue_token`, the previous page's; every page has the first page's resourceVersion)."""
        query = {}
        if limit > 0:
            query["limit"] = str(limit)
        if continue_token:
            query["continue"] = continue_token
        obj = self._request("GET", kind.collection(), query=query or None)
        meta = obj.get("metadata") or {}
        return ListResult(
            list(obj.get("items") or []), str(meta.get("resourceVersion", "")), str(meta.get("continue") or "")
        )

    def watch(self, kind: Kind, resource_version: str, timeout_seconds: int = 60) -> Iterator[WatchEvent]:
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        url = f"{self.host}{kind.collection()}?{urlencode(query)}"
        try:
            resp = self._http.request(
                "GET",
                url,
                headers=self._auth_headers(),
                preload_content=False,
                redirect=False,
                timeout=urllib3.Timeout(connect=10, read=timeout_seconds + 15),
            )
        except urllib3.exceptions.HTTPError as err:
            REST_CLIENT_REQUESTS.labels("<error>", "GET").inc()
            raise ConnectionLostError(f"watch {kind.name}: {err}") from err
        REST_CLIENT_REQUESTS.labels(str(resp.status), "GET").inc()
        try:
            if resp.status != 200:
                _decode("GET", kind.collection(), resp.status, resp.read())
            buffer = b""
            for chunk in resp.stream(65536, decode_content=True):
                buffer += chunk
                if b"\n" not in chunk:
                    continue
                *lines, buffer = buffer.split(b"\n")  # one split a chunk, not one copy of the rest per event
                for line in lines:
                    if line.strip():
                        yield _watch_event(json.loads(line))
        except urllib3.exceptions.HTTPError as err:
            raise ConnectionLostError(f"watch {kind.name}: {err}") from err
        finally:
            resp.release_conn()

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Obj:
        return self._request("GET", kind.item(name, namespace))

    # Writes ----------------------------------------------------------------------------------

    def create(self, kind: Kind, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        return self._request("POST", kind.collection(namespace), dict(obj))

    def patch(
        self,
        kind: Kind,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Obj:
        path = kind.item(name, namespace) + (f"/{subresource}" if subresource else "")
        return self._request("PATCH", path, dict(patch), content_type="application/merge-patch+json")

    def replace(self, kind: Kind, name: str, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        return self._request("PUT", kind.item(name, namespace), dict(obj))

    def delete(self, kind: Kind, name: str, namespace: str | None = None) -> None:
        self._request("DELETE", kind.item(name, namespace))

    def bind(self, namespace: str, pod: str, node: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        self._request("POST", PODS.item(pod, namespace) + "/binding", body)

    def evict(self, namespace: str, pod: str) -> None:
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": namespace}}
        self._request("POST", PODS.item(pod, namespace) + "/eviction", body)

    def create_event(self, namespace: str, event: Mapping[str, Any]) -> None:
        self._request("POST", EVENTS.collection(namespace), dict(event))


def _decode(method: str, path: str, status: int, data: bytes) -> Obj:
    try:
        obj = json.loads(data) if data else {}
    except ValueError:
        obj = {"message": data[:200].decode(errors="replace")}
    if status >= 300:
        message = obj.get("message", "") if isinstance(obj, dict) else ""
        reason = obj.get("reason", "") if isinstance(obj, dict) else ""
        raise from_status(status, f"{method} {path}: {status} {message}".rstrip(), reason)
    if not isinstance(obj, dict):
        raise KubeError(f"{method} {path}: unexpected answer")
    return obj


def _watch_event(raw: Any) -> WatchEvent:
    if not isinstance(raw, dict):
        raise KubeError("watch: unexpected event")
    event_type = str(raw.get("type", ""))
    obj = raw.get("object") or {}
    if event_type == "ERROR":
        code = int(obj.get("code") or 500)
        raise from_status(code, f"watch: {obj.get('message', '')}", str(obj.get("reason", "")))
    return WatchEvent(event_type, obj)
