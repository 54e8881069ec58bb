"""A small fake CSI external provisioner for end-to-end tests (test code only).

It does what the real `external-provisioner` sidecar does for a WaitForFirstConsumer class, minus
the storage: a thread watches PersistentVolumeClaims; for each claim of one of its classes that
kube-scheduler has annotated with `volume.kubernetes.io/selected-node` and that has no volume yet,
it reads that node's zone and creates a PersistentVolume there — `claimRef` to the claim,
`spec.nodeAffinity` on `topology.kubernetes.io/zone`, the claim's size, access modes and volume
mode, `csi.driver` = its name, annotation `pv.kubernetes.io/provisioned-by` — which the
PersistentVolume controller of kube-controller-manager then binds to the claim. It also deletes
its Released volumes (reclaim policy Delete), as the real one does. `provisioned` lists what it
made; `errors` what went wrong (a test asserts it stays empty).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from controller.kube.client import KubeClient
from controller.kube.errors import AlreadyExistsError, KubeError, NotFoundError
from controller.kube.resources import CLAIMS, NODES, STORAGECLASSES, VOLUMES

DRIVER = "fake.csi.karpy.sh"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
ZONE = "topology.kubernetes.io/zone"


class FakeProvisioner:
    def __init__(self, kube: KubeClient, driver: str = DRIVER) -> None:
        self.kube, self.driver = kube, driver
        self.provisioned: dict[str, str] = {}  # claim key → zone of its volume
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> FakeProvisioner:
        for target in (self._claims, self._volumes):
            thread = threading.Thread(target=target, daemon=True, name=f"fake-csi-{target.__name__}")
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def _watch(self, kind: Any, handle: Any) -> None:
        while not self._stop.is_set():
            try:
                listed = self.kube.list(kind)
                for obj in listed.items:
                    handle(obj)
                rv = listed.resource_version
                while not self._stop.is_set():
                    for event in self.kube.watch(kind, rv, timeout_seconds=2):
                        rv = str(event.object.get("metadata", {}).get("resourceVersion") or rv)
                        if event.type in ("ADDED", "MODIFIED"):
                            handle(event.object)
                        if self._stop.is_set():
                            return
            except (KubeError, OSError) as err:
                self.errors.append(f"watching {kind.name}: {err}")
                self._stop.wait(0.5)

    def _claims(self) -> None:
        self._watch(CLAIMS, self._provision)

    def _volumes(self) -> None:
        self._watch(VOLUMES, self._reclaim)

    def _mine(self, class_name: str) -> bool:
        try:
            return bool(self.kube.get(STORAGECLASSES, class_name).get("provisioner") == self.driver)
        except NotFoundError:
            return False

    def _provision(self, claim: dict[str, Any]) -> None:
        meta, spec = claim["metadata"], claim.get("spec") or {}
        node_name = (meta.get("annotations") or {}).get(SELECTED_NODE)
        key = f"{meta['namespace']}/{meta['name']}"
        if not node_name or spec.get("volumeName") or meta.get("deletionTimestamp") or key in self.provisioned:
            return
        if not self._mine(str(spec.get("storageClassName") or "")):
            return
        try:
            zone = self.kube.get(NODES, node_name)["metadata"].get("labels", {}).get(ZONE)
        except NotFoundError:
            self.errors.append(f"claim {key}: selected node {node_name} does not exist")
            return
        if not zone:
            self.errors.append(f"claim {key}: node {node_name} has no zone")
            return
        volume = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"pvc-{meta['uid']}", "annotations": {"pv.kubernetes.io/provisioned-by": self.driver}},
            "spec": {
                "capacity": {"storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")},
                "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                "volumeMode": spec.get("volumeMode") or "Filesystem",
                "storageClassName": spec.get("storageClassName"),
                "persistentVolumeReclaimPolicy": "Delete",
                "claimRef": {
                    "kind": "PersistentVolumeClaim",
                    "apiVersion": "v1",
                    "namespace": meta["namespace"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
                "csi": {"driver": self.driver, "volumeHandle": f"vol-{meta['uid']}"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}]
                    }
                },
            },
        }
        try:
            self.kube.create(VOLUMES, volume)
        except AlreadyExistsError:
            pass
        except KubeError as err:
            self.errors.append(f"claim {key}: creating its volume: {err}")
            return
        self.provisioned[key] = zone

    def _reclaim(self, volume: dict[str, Any]) -> None:
        spec, status = volume.get("spec") or {}, volume.get("status") or {}
        mine = (spec.get("csi") or {}).get("driver") == self.driver
        if mine and status.get("phase") == "Released" and spec.get("persistentVolumeReclaimPolicy") == "Delete":
            try:
                self.kube.delete(VOLUMES, volume["metadata"]["name"])
            except NotFoundError:
                pass
            except KubeError as err:
                self.errors.append(f"deleting volume {volume['metadata']['name']}: {err}")


def zones_of(volumes: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Volume name → the zone its node affinity requires (first `In` value on the zone key)."""
    out = {}
    for volume in volumes:
        terms = (((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms")
        for term in terms or []:
            for expr in term.get("matchExpressions") or []:
                if expr.get("key") == ZONE and expr.get("operator") == "In" and expr.get("values"):
                    out[volume["metadata"]["name"]] = expr["values"][0]
    return out
