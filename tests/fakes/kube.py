"""`FakeKube`: an in-memory implementation of karpy's `Kube` adapter protocol.

Objects are dicts per kind; resourceVersions increase; `delete` of an object with finalizers only
sets `deletionTimestamp` (removing the last finalizer by patch then deletes it), as the API
server does. Knobs: `evict_errors[pod_key]` (a list of exceptions raised by successive evictions),
`watch_script` (events/exceptions `watch` yields/raises), `fail_next[method]`, `expire_continues`
(how many of the next lists given a continue token answer 410, as an apiserver whose etcd
compacted past the list's resourceVersion does). Lists page as the API server does: `limit`
objects in name order, a continue token (the next index and the list's resourceVersion) while more
remain, every page carrying the first page's resourceVersion. Records: `calls`
(method, args), `events` (created Event objects), `evictions`, `bindings`, and `log`: every write
as a watch would report it, `(resourceVersion, kind name, ADDED|MODIFIED|DELETED, object)`, in order.
"""

from __future__ import annotations

import copy
import functools
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ParamSpec, TypeVar

from controller.clock import Clock, FakeClock
from controller.core.timestamps import format_timestamp
from controller.kube.client import ListResult, Obj, WatchEvent
from controller.kube.errors import AlreadyExistsError, ConflictError, GoneError, NotFoundError
from controller.kube.resources import NODES, PODS, Kind


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _locked(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """One write at a time: controllers call the adapter from worker threads (binds, drains)."""

    @functools.wraps(method)
    def locked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with args[0]._lock:  # type: ignore[attr-defined]
            return method(*args, **kwargs)

    return locked


class FakeKube:
    def __init__(self, clock: Clock | None = None) -> None:
        self._lock = threading.RLock()
        self.clock = clock or FakeClock()
        self.objects: dict[str, dict[str, Obj]] = {}
        self.rv = 0
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.events: list[Obj] = []
        self.evictions: list[str] = []
        self.bindings: list[tuple[str, str]] = []
        self.evict_errors: dict[str, list[Exception]] = {}
        self.watch_script: list[WatchEvent | Exception] = []
        self.fail_next: dict[str, Exception] = {}
        self.log: list[tuple[int, str, str, Obj]] = []
        self.expire_continues = 0

    # Helpers for tests -----------------------------------------------------------------------

    @_locked
    def put(self, kind: Kind, obj: Mapping[str, Any]) -> Obj:
        stored = copy.deepcopy(dict(obj))
        meta = stored.setdefault("metadata", {})
        meta.setdefault("creationTimestamp", format_timestamp(self.clock.now()))
        meta.setdefault("uid", f"uid-{meta.get('name')}")
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        store = self.objects.setdefault(kind.name, {})
        key = _key(kind, meta.get("name", ""), meta.get("namespace"))
        self.log.append((self.rv, kind.name, "MODIFIED" if key in store else "ADDED", copy.deepcopy(stored)))
        store[key] = stored
        return stored

    @_locked
    def _remove(self, kind: Kind, key: str) -> None:
        removed = self.objects[kind.name].pop(key)
        self.rv += 1
        self.log.append((self.rv, kind.name, "DELETED", copy.deepcopy(removed)))

    def items(self, kind: Kind) -> list[Obj]:
        return list(self.objects.get(kind.name, {}).values())

    def find(self, kind: Kind, name: str, namespace: str | None = None) -> Obj | None:
        return self.objects.get(kind.name, {}).get(_key(kind, name, namespace))

    def _maybe_fail(self, method: str) -> None:
        err = self.fail_next.pop(method, None)
        if err is not None:
            raise err

    # Kube protocol ---------------------------------------------------------------------------

    def list(self, kind: Kind, limit: int = 0, continue_token: str = "") -> ListResult:
        self.calls.append(("list", (kind.name, limit, continue_token)))
        self._maybe_fail("list")
        items = sorted(self.items(kind), key=lambda o: _sort_key(kind, o))
        start, rv = 0, str(self.rv)
        if continue_token:
            if self.expire_continues > 0:
                self.expire_continues -= 1
                raise GoneError("The provided continue parameter is too old", 410)
            index, _, rv = continue_token.partition("/")
            start = int(index)
        end = start + limit if limit > 0 else len(items)
        token = f"{end}/{rv}" if end < len(items) else ""
        return ListResult(copy.deepcopy(items[start:end]), rv, token)

    def watch(self, kind: Kind, resource_version: str, timeout_seconds: int = 60) -> Iterator[WatchEvent]:
        self.calls.append(("watch", (kind.name, resource_version)))
        while self.watch_script:
            item = self.watch_script.pop(0)
            if isinstance(item, Exception):
                raise item
            yield item
        return

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Obj:
        self._maybe_fail("get")
        found = self.find(kind, name, namespace)
        if found is None:
            raise NotFoundError(f"{kind.name} {name} not found", 404)
        return copy.deepcopy(found)

    @_locked
    def create(self, kind: Kind, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        self.calls.append(("create", (kind.name, (obj.get("metadata") or {}).get("name"))))
        self._maybe_fail("create")
        meta = obj.get("metadata") or {}
        if self.find(kind, meta.get("name", ""), namespace or meta.get("namespace")) is not None:
            raise AlreadyExistsError("already exists", 409)
        if namespace:
            obj = merge_patch(obj, {"metadata": {"namespace": namespace}})
        return copy.deepcopy(self.put(kind, obj))

    @_locked
    def patch(
        self,
        kind: Kind,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Obj:
        self.calls.append(("patch", (kind.name, name, subresource, copy.deepcopy(dict(patch)))))
        self._maybe_fail("patch")
        current = self.get(kind, name, namespace)
        want_rv = (patch.get("metadata") or {}).get("resourceVersion")
        if want_rv and want_rv != current["metadata"]["resourceVersion"]:
            raise ConflictError("the object has been modified", 409)
        updated = merge_patch(current, patch)
        if updated["metadata"].get("deletionTimestamp") and not updated["metadata"].get("finalizers"):
            self._remove(kind, _key(kind, name, namespace))
            return dict(updated)
        return copy.deepcopy(self.put(kind, updated))

    @_locked
    def replace(self, kind: Kind, name: str, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        self.calls.append(("replace", (kind.name, name)))
        current = self.get(kind, name, namespace)
        if (obj.get("metadata") or {}).get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise ConflictError("the object has been modified", 409)
        return copy.deepcopy(self.put(kind, obj))

    @_locked
    def delete(self, kind: Kind, name: str, namespace: str | None = None) -> None:
        self.calls.append(("delete", (kind.name, name)))
        self._maybe_fail("delete")
        current = self.find(kind, name, namespace)
        if current is None:
            raise NotFoundError(f"{kind.name} {name} not found", 404)
        if current["metadata"].get("finalizers"):
            if not current["metadata"].get("deletionTimestamp"):
                current["metadata"]["deletionTimestamp"] = format_timestamp(self.clock.now())
                self.put(kind, current)
            return
        self._remove(kind, _key(kind, name, namespace))

    @_locked
    def bind(self, namespace: str, pod: str, node: str) -> None:
        self.calls.append(("bind", (namespace, pod, node)))
        self._maybe_fail("bind")
        current = self.get(PODS, pod, namespace)
        if current.get("spec", {}).get("nodeName"):
            raise ConflictError("pod is already assigned", 409)
        if current.get("spec", {}).get("schedulingGates"):
            raise ConflictError(f"pod {pod} has non-empty .spec.schedulingGates", 409)
        if self.find(NODES, node) is None:
            raise NotFoundError(f"node {node} not found", 404)
        self.bindings.append((f"{namespace}/{pod}", node))
        self.put(PODS, merge_patch(current, {"spec": {"nodeName": node}}))

    @_locked
    def evict(self, namespace: str, pod: str) -> None:
        key = f"{namespace}/{pod}"
        self.calls.append(("evict", (namespace, pod)))
        errors = self.evict_errors.get(key)
        if errors:
            raise errors.pop(0)
        if self.find(PODS, pod, namespace) is None:
            raise NotFoundError(f"pod {key} not found", 404)
        self.evictions.append(key)
        self.delete(PODS, pod, namespace)

    @_locked
    def create_event(self, namespace: str, event: Mapping[str, Any]) -> None:
        self.events.append(copy.deepcopy(dict(event)))


def _key(kind: Kind, name: str, namespace: str | None) -> str:
    return f"{namespace or 'default'}/{name}" if kind.namespaced else name


def _sort_key(kind: Kind, obj: Obj) -> str:
    meta = obj["metadata"]
    return _key(kind, meta["name"], meta.get("namespace"))
