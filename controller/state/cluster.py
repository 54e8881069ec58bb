"""`ClusterState`: the one in-memory view of the cluster, fed by watches, read via snapshots.

Writers: the informers (`informer.py`) call `replace(kind, items)` after a list and
`apply(kind, event, obj)` per watch event; controllers record what they just did before the
watch reports it: `record_node(obj)` (an in-flight node), `record_binding(pod, node)`,
`nominate(nodes, until)`, `mark_for_deletion(nodes)` / `unmark_for_deletion(nodes)`.
Readers: `snapshot()` (an immutable `Snapshot`) and `synced()`, which gates every decision:
true once every watched kind has been listed and none is re-listing after a lost watch.
Thread-safe (one lock); views are cached per object resourceVersion, and an object sent again
with the resourceVersion held (a re-list) is not kept twice: the held one stays (`known`, which
the informers call page by page while listing). Objects are kept without
`metadata.managedFields`; of claims, volumes, storage classes and CSINodes only what placement
reads is kept, and `Snapshot.volumes` is rebuilt only after one of them changed. Pods are kept indexed
incrementally: a snapshot rebuilds only the views of pods changed since the last one and the pod
lists of the nodes they left or joined, so that the several controllers snapshotting every tick
do not walk thousands of pods each time. What did not change since the last snapshot is handed
out again: the pod map (copied only after a pod view changed; recorded bindings overlay a copy,
made again only when they or the pods change) and each node's view, with the scheduler state it
caches (rebuilt only when its object, its pods, its mark or its nomination changed) — at 1,000
nodes / 25,000 pods a snapshot of a settled cluster costs ~1 ms of CPU instead of ~7.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from controller.clock import Clock
from controller.kube.resources import (
    AWSNODETEMPLATES,
    CLAIMS,
    CSINODES,
    DAEMONSETS,
    NODES,
    PDBS,
    PODS,
    PROVISIONERS,
    STORAGECLASSES,
    VOLUMES,
    WATCHED,
)
from controller.scheduling.types import PodRequest, VolumeObjects
from controller.scheduling.workloads import daemonset_pods
from controller.state.snapshot import NodeView, Obj, PodView, Snapshot
from controller.state.trim import kept
from controller.state.views import (
    claim_view,
    class_view,
    csinode_view,
    node_view,
    pdb_view,
    pod_view,
    pod_view_since,
    provisioner_view,
    volume_view,
)

IN_FLIGHT_TTL = 120.0  # an in-flight node the watch never reports is forgotten after this
BINDING_TTL = 30.0
WATCHED_NAMES = tuple(kind.name for kind in WATCHED)

_BUILDERS: Mapping[str, Callable[[Obj], Any]] = {
    PODS.name: pod_view,
    NODES.name: node_view,
    PROVISIONERS.name: provisioner_view,
    PDBS.name: pdb_view,
    CLAIMS.name: claim_view,
    VOLUMES.name: volume_view,
    STORAGECLASSES.name: class_view,
    CSINODES.name: csinode_view,
}
VOLUME_KINDS = frozenset({CLAIMS.name, VOLUMES.name, STORAGECLASSES.name, CSINODES.name})


def object_key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def _held_or_kept(kind: str, obj: Obj, held: Mapping[str, Obj]) -> Obj:
    """The object already held under `obj`'s key when it is `obj` or has its resourceVersion;
    otherwise `obj` as state keeps it (sharing the sections the held one has unchanged)."""
    old = held.get(object_key(obj))
    if old is obj:
        return old
    if old is not None:
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv and rv == (old.get("metadata") or {}).get("resourceVersion"):
            return old
    return kept(kind, obj, old)


class ClusterState:
    def __init__(self, clock: Clock, kinds: Iterable[str] = WATCHED_NAMES) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._kinds = tuple(kinds)
        self._objects: dict[str, dict[str, Obj]] = {k: {} for k in self._kinds}
        self._views: dict[str, dict[str, tuple[str, Any]]] = {k: {} for k in self._kinds}
        self._ds_pods: tuple[tuple[tuple[str, str], ...], tuple[PodRequest, ...]] | None = None
        self._listed: set[str] = set()
        self._in_flight: dict[str, tuple[float, Obj]] = {}
        self._bindings: dict[str, tuple[str, float]] = {}
        self._nominated: dict[str, float] = {}
        self._marked: set[str] = set()
        # pods: current views (without recorded bindings), changed keys not yet indexed, and the
        # views per node with each node's sorted tuple cached until one of its pods changes
        self._pod_views: dict[str, PodView] = {}
        self._pod_versions: dict[str, str] = {}
        self._dirty_pods: set[str] = set()
        self._by_node: dict[str, dict[str, PodView]] = {}
        self._node_pods: dict[str, tuple[PodView, ...]] = {}
        # what the last snapshot handed out, reused while its inputs are the same objects: the pod
        # map (until a pod view changes) and each node's final view (its base view, pods, marks)
        self._pods_out: dict[str, PodView] | None = None
        self._unbound: dict[str, PodView] = {}  # the views of pods their objects do not bind
        self._unbound_out: tuple[PodView, ...] | None = None
        self._nodes_out: dict[str, tuple[NodeView, tuple[PodView, ...], NodeView]] = {}
        self._in_flight_views: dict[str, tuple[Obj, NodeView]] = {}
        # recorded bindings: each pod's view bound there (made once per view and node), and the
        # last overlay (the pod map it overlaid, the bound views, and the map, unbound pods and
        # per-node pods it gave), handed out again while neither changed
        self._bound_views: dict[str, tuple[PodView, PodView]] = {}
        self._overlay: tuple[
            dict[str, PodView], dict[str, PodView], dict[str, PodView], tuple[PodView, ...],
            dict[str, tuple[PodView, ...]],
        ] | None = None  # fmt: skip
        self.generation = 0  # bumps on every change; lets controllers notice "something changed"
        self._volumes: tuple[int, VolumeObjects] = (-1, VolumeObjects())  # rebuilt when those kinds change
        self._volume_changes = 0

    # Feeding ---------------------------------------------------------------------------------

    def known(self, kind: str, items: Iterable[Obj]) -> list[Obj]:
        """`items` as cluster state keeps them: the object it holds already where the key and
        resourceVersion are the same (a re-list sends every unchanged object again: one copy
        stays, the one its views were built from), the others trimmed (`trim.kept`). The
        informers call it page by page while listing, so a re-list holds no second copy."""
        with self._lock:
            held = self._objects.get(kind, {})
            return [_held_or_kept(kind, o, held) for o in items]

    def replace(self, kind: str, items: Iterable[Obj]) -> None:
        with self._lock:
            if kind == PODS.name:
                self._dirty_pods.update(self._objects[kind])
            held = self._objects[kind]
            self._objects[kind] = {object_key(o): _held_or_kept(kind, o, held) for o in items}
            if kind == PODS.name:
                self._dirty_pods.update(self._objects[kind])
            if kind in VOLUME_KINDS:
                self._volume_changes += 1
            self._listed.add(kind)
            self.generation += 1

    def apply(self, kind: str, event_type: str, obj: Obj) -> None:
        key = object_key(obj)
        with self._lock:
            if event_type == "DELETED":
                self._objects[kind].pop(key, None)
            elif event_type in ("ADDED", "MODIFIED"):
                self._objects[kind][key] = _held_or_kept(kind, obj, self._objects[kind])
            else:
                return
            if kind == PODS.name:
                self._dirty_pods.add(key)
            if kind in VOLUME_KINDS:
                self._volume_changes += 1
            self.generation += 1

    def unsynced(self, kind: str) -> None:
        """A watch was lost: decisions wait until the kind is listed again."""
        with self._lock:
            self._listed.discard(kind)

    def synced(self) -> bool:
        with self._lock:
            return self._listed.issuperset(self._kinds)

    # What controllers just did ---------------------------------------------------------------

    def record_node(self, obj: Obj) -> None:
        with self._lock:
            self._in_flight[object_key(obj)] = (self._clock.now(), obj)
            self.generation += 1

    def record_binding(self, pod_key: str, node: str) -> None:
        with self._lock:
            self._bindings[pod_key] = (node, self._clock.now())
            self.generation += 1

    def nominate(self, nodes: Iterable[str], until: float) -> None:
        with self._lock:
            for name in nodes:
                self._nominated[name] = max(until, self._nominated.get(name, 0.0))

    def mark_for_deletion(self, nodes: Iterable[str]) -> None:
        with self._lock:
            self._marked.update(nodes)
            self.generation += 1

    def unmark_for_deletion(self, nodes: Iterable[str]) -> None:
        with self._lock:
            self._marked.difference_update(nodes)
            self.generation += 1

    # Reading ---------------------------------------------------------------------------------

    def _view(self, kind: str, key: str, obj: Obj) -> Any:
        rv = str((obj.get("metadata") or {}).get("resourceVersion") or id(obj))
        cached = self._views[kind].get(key)
        if cached is not None and cached[0] == rv:
            return cached[1]
        view = _BUILDERS[kind](obj)
        self._views[kind][key] = (rv, view)
        return view

    def _forget_stale(self, kind: str) -> None:
        views = self._views[kind]
        if len(views) > len(self._objects[kind]) * 2 + 64:
            for key in [k for k in views if k not in self._objects[kind]]:
                del views[key]

    def snapshot(self) -> Snapshot:
        now = self._clock.now()
        with self._lock:
            for kind in _BUILDERS:
                if kind in self._objects:
                    self._forget_stale(kind)
            pods, unbound, recorded = self._pods(now)
            nodes = self._nodes(now, recorded)
            provisioners = {
                k: self._view(PROVISIONERS.name, k, o) for k, o in self._objects.get(PROVISIONERS.name, {}).items()
            }
            pdbs = tuple(self._view(PDBS.name, k, o) for k, o in self._objects.get(PDBS.name, {}).items())
            daemonsets = tuple(self._objects.get(DAEMONSETS.name, {}).values())
            return Snapshot(
                synced=self._listed.issuperset(self._kinds),
                now=now,
                pods=pods,
                unbound=unbound,
                nodes=nodes,
                provisioners=provisioners,
                daemonsets=daemonsets,
                pdbs=pdbs,
                awsnodetemplates=dict(self._objects.get(AWSNODETEMPLATES.name, {})),
                daemonset_pods=self._daemonset_pods(daemonsets),
                volumes=self._volume_objects(),
            )

    def _daemonset_pods(self, daemonsets: tuple[Obj, ...]) -> tuple[PodRequest, ...]:
        """The DaemonSets' pod templates, converted again only when a DaemonSet changed."""
        versions = tuple(
            (object_key(d), str((d.get("metadata") or {}).get("resourceVersion") or id(d))) for d in daemonsets
        )
        if self._ds_pods is None or self._ds_pods[0] != versions:
            self._ds_pods = (versions, tuple(daemonset_pods(daemonsets)))
        return self._ds_pods[1]

    def _volume_objects(self) -> VolumeObjects:
        """Claims, volumes, classes and CSINode limits (rebuilt only after one of them changed)."""
        version, cached = self._volumes
        if version == self._volume_changes:
            return cached

        def views(kind: str) -> dict[str, Any]:
            return {k: self._view(kind, k, o) for k, o in self._objects.get(kind, {}).items()}

        csinodes = views(CSINODES.name).values()
        objects = VolumeObjects(
            claims=views(CLAIMS.name),
            volumes=views(VOLUMES.name),
            classes=views(STORAGECLASSES.name),
            node_limits={name: limits for name, limits in csinodes if name},
        )
        self._volumes = (self._volume_changes, objects)
        return objects

    def _index_pods(self) -> None:
        """Bring the pod views and the per-node index up to date with the changed pods."""
        objects = self._objects.get(PODS.name, {})
        for key in self._dirty_pods:
            old = self._pod_views.get(key)
            obj = objects.get(key)
            view: PodView | None = None
            if obj is not None:
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or id(obj))
                if old is not None and self._pod_versions.get(key) == rv:
                    continue
                view = pod_view_since(obj, old)
                self._pod_views[key], self._pod_versions[key] = view, rv
            elif old is not None:
                del self._pod_views[key], self._pod_versions[key]
            else:
                continue
            self._pods_out = self._unbound_out = None
            if view is not None and not view.node_name:
                self._unbound[key] = view
            else:
                self._unbound.pop(key, None)
            if old is not None and old.node_name:
                self._by_node.get(old.node_name, {}).pop(key, None)
                self._node_pods.pop(old.node_name, None)
            if view is not None and view.node_name:
                self._by_node.setdefault(view.node_name, {})[key] = view
                self._node_pods.pop(view.node_name, None)
        self._dirty_pods.clear()
        for name in [n for n, pods in self._by_node.items() if not pods]:
            del self._by_node[name]

    def _pods(self, now: float) -> tuple[dict[str, PodView], tuple[PodView, ...], dict[str, tuple[PodView, ...]]]:
        """Every pod's view, with the bindings karpy recorded and the watch has not reported yet;
        the pods not bound; and the pods of each node that has such bindings (sorted by key)."""
        self._index_pods()
        if self._pods_out is None:  # a copy: the map a snapshot holds never changes afterwards
            self._pods_out = dict(self._pod_views)
        if self._unbound_out is None:
            self._unbound_out = tuple(self._unbound.values())
        pods, unbound = self._pods_out, self._unbound_out
        bound: dict[str, PodView] = {}  # pod → its view bound where karpy bound it
        for key, (node, when) in list(self._bindings.items()):
            view = pods.get(key)
            if view is None:
                if now - when > BINDING_TTL:
                    del self._bindings[key]
                continue
            if view.node_name or now - when > BINDING_TTL:
                del self._bindings[key]
                continue
            last = self._bound_views.get(key)
            if last is not None and last[0] is view and last[1].node_name == node:
                bound[key] = last[1]
            else:
                bound[key] = dataclasses.replace(view, node_name=node, unschedulable=False)
        self._bound_views = {key: (pods[key], view) for key, view in bound.items()}
        if not bound:
            return pods, unbound, {}
        held = self._overlay
        same = held is not None and held[0] is pods and held[1].keys() == bound.keys()
        if held is not None and same and all(held[1][key] is view for key, view in bound.items()):
            return held[2], held[3], held[4]  # the same bindings over the same pods as last time
        overlaid = {**pods, **bound}
        recorded: dict[str, list[PodView]] = {}
        for view in bound.values():
            recorded.setdefault(view.node_name, []).append(view)
        on = {
            node: tuple(sorted([*self._by_node.get(node, {}).values(), *extra], key=lambda p: p.key))
            for node, extra in recorded.items()
        }
        left = tuple(p for p in unbound if p.key not in bound)
        self._overlay = (pods, bound, overlaid, left, on)
        return overlaid, left, on

    def _pods_on(self, node: str, recorded: Mapping[str, tuple[PodView, ...]]) -> tuple[PodView, ...]:
        found = recorded.get(node)
        if found is not None:
            return found
        cached = self._node_pods.get(node)
        if cached is None:
            cached = tuple(sorted(self._by_node.get(node, {}).values(), key=lambda p: p.key))
            self._node_pods[node] = cached
        return cached

    def _nodes(self, now: float, recorded: Mapping[str, tuple[PodView, ...]]) -> dict[str, NodeView]:
        objects = self._objects.get(NODES.name, {})
        views: dict[str, NodeView] = {k: self._view(NODES.name, k, o) for k, o in objects.items()}
        for name, (when, obj) in list(self._in_flight.items()):
            if name in objects or now - when > IN_FLIGHT_TTL:
                del self._in_flight[name]
            else:
                views[name] = self._in_flight_view(name, obj)
        self._in_flight_views = {n: v for n, v in self._in_flight_views.items() if n in self._in_flight}
        for name in [n for n, until in self._nominated.items() if until <= now]:
            del self._nominated[name]
        self._marked.intersection_update(views)
        out, held, made = {}, self._nodes_out, {}
        for name, view in views.items():
            pods = self._pods_on(name, recorded)
            marked, nominated = view.deleting or name in self._marked, name in self._nominated
            last = held.get(name)
            if last is not None and last[0] is view and last[1] is pods:
                node = last[2]
                if node.marked_for_deletion != marked or node.nominated != nominated:
                    node = dataclasses.replace(node, marked_for_deletion=marked, nominated=nominated)
            else:
                node = dataclasses.replace(view, pods=pods, marked_for_deletion=marked, nominated=nominated)
            made[name] = (view, pods, node)
            out[name] = node
        self._nodes_out = made
        return out

    def _in_flight_view(self, name: str, obj: Obj) -> NodeView:
        """The view of a node karpy created and the watch has not reported yet, built once per object."""
        cached = self._in_flight_views.get(name)
        if cached is None or cached[0] is not obj:
            cached = (obj, dataclasses.replace(node_view(obj), in_flight=True))
            self._in_flight_views[name] = cached
        return cached[1]
