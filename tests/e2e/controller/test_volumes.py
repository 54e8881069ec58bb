"""End to end: volumes decide where a pod may run (issue 17), on the real control plane.

One controller (killed and replaced midway) goes through the stateful cases in phases, with the
fake CSI external provisioner of `tests/support/csiprovisioner.py` making volumes in the zone of
the node kube-scheduler selected, and kube-controller-manager's volume controllers binding them:
1. one batch: a StatefulSet of 3 across zones with dynamic WaitForFirstConsumer claims; a pod
   whose claim is pre-bound to a volume in us-west-2c (it needs a new node, launched there); the
   issue's case — a static WaitForFirstConsumer volume (no provisioner) in us-west-2b; a class
   whose `allowedTopologies` allow only us-west-2a; a generic ephemeral volume; a pod whose claim
   does not exist (pending with karpy's reason naming it, nothing launched for it);
2. the controller killed (SIGKILL), a new one started, the StatefulSet scaled to 5 (a second batch);
3. a CSINode attach limit reached on a node the next pod fits: it gets a new node in that zone;
4. the node of a stateful pod deleted: the pod comes back in its volume's zone, its claim still Bound;
5. consolidation on, the stateless pods gone: a pass judges every node (deleting or replacing
   what it may), never moving a pod out of its volume's zone.
After each phase: every claim of a running pod Bound, its volume in the node's zone, every rule
of `tests/support/placement.py` (VolumeBinding, VolumeZone, NodeVolumeLimits, and the rest) held,
and every pod with a claim to bind bound by kube-scheduler, never by karpy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from controller.kube.errors import KubeError, NotFoundError
from controller.kube.resources import CLAIMS, CSINODES, NODES, PODS, STORAGECLASSES, VOLUMES, Kind
from tests.e2e.env import FAST, Controller, KarpyEnv
from tests.support import placement
from tests.support.csiprovisioner import DRIVER, FakeProvisioner, zones_of
from tests.support.poll import until

pytestmark = pytest.mark.e2e

ZONE = "topology.kubernetes.io/zone"
ZONES = ["us-west-2a", "us-west-2b", "us-west-2c"]
STATEFULSETS = Kind("statefulsets", "apps/v1", "statefulsets", True)


class Names:
    """Cluster-scoped names of one test run (storage classes and volumes outlive namespaces)."""

    def __init__(self, namespace: str) -> None:
        self.dynamic = f"{namespace}-dynamic"
        self.zone_a = f"{namespace}-zone-a"
        self.local = f"{namespace}-local"
        self.prebound = f"{namespace}-prebound"
        self.static = f"{namespace}-static"


def zone_term(zone: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}


def storage_class(name: str, provisioner: str, zones: list[str] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
        "reclaimPolicy": "Delete",
    }
    if zones:
        obj["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}]
    return obj


def static_volume(name: str, class_name: str, zone: str, claim: tuple[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": class_name,
        "persistentVolumeReclaimPolicy": "Retain",
        "local": {"path": f"/mnt/{name}"},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [zone_term(zone)]}},
    }
    if claim is not None:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def claim(namespace: str, name: str, class_name: str, volume: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "storageClassName": class_name,
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
    }
    if volume:
        spec["volumeName"] = volume
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def container(cpu: str = "500m") -> dict[str, Any]:
    return {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": "512Mi"}}}


def pod(namespace: str, name: str, volumes: list[dict[str, Any]], cpu: str = "500m", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {"terminationGracePeriodSeconds": 0, "containers": [container(cpu)], "volumes": volumes, **spec},
    }


def mount(claim_name: str) -> dict[str, Any]:
    return {"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}


def statefulset(namespace: str, name: str, replicas: int, class_name: str, spread: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"terminationGracePeriodSeconds": 0, "containers": [container()]}
    if spread:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": name}},
            }
        ]
    template = {
        "metadata": {"name": "data"},
        "spec": {
            "storageClassName": class_name,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": name}},
            "volumeClaimTemplates": [template],
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


# -- reading the cluster -------------------------------------------------------------------------


def cluster_volumes(env: KarpyEnv) -> placement.Volumes:
    claims = [c for c in env.kube.list(CLAIMS).items if c["metadata"]["namespace"] == env.namespace]
    return placement.Volumes.of(claims, env.kube.list(VOLUMES).items, env.kube.list(CSINODES).items)


def node_zone(env: KarpyEnv, node_name: str) -> str:
    return str(env.kube.get(NODES, node_name)["metadata"]["labels"].get(ZONE, ""))


def placed(env: KarpyEnv, names: list[str]) -> bool:
    """Every named pod Running with all its claims Bound."""
    vols = cluster_volumes(env)
    running = {p["metadata"]["name"]: p for p in env.running()}
    for name in names:
        p = running.get(name)
        if p is None:
            return False
        for claim_name in placement.claim_names(p):
            c = vols.claims.get(f"{env.namespace}/{claim_name}")
            if c is None or c.get("status", {}).get("phase") != "Bound":
                return False
    return True


def volume_zones(env: KarpyEnv) -> dict[str, tuple[str, str]]:
    """Running pod with a claim → (zone of its volume, zone of its node)."""
    vols = cluster_volumes(env)
    zones = zones_of(vols.volumes.values())
    out = {}
    for p in env.running():
        for claim_name in placement.claim_names(p):
            volume = vols.claims[f"{env.namespace}/{claim_name}"]["spec"]["volumeName"]
            out[p["metadata"]["name"]] = (zones[volume], node_zone(env, p["spec"]["nodeName"]))
    return out


def csi_claims_on(env: KarpyEnv, node_name: str) -> int:
    """The distinct claims of the fake driver's volumes that the node's pods mount."""
    vols = cluster_volumes(env)
    claims = set()
    for p in env.running():
        if p["spec"]["nodeName"] != node_name:
            continue
        for claim_name in placement.claim_names(p):
            volume = vols.volumes[vols.claims[f"{env.namespace}/{claim_name}"]["spec"]["volumeName"]]
            if (volume["spec"].get("csi") or {}).get("driver") == DRIVER:
                claims.add(claim_name)
    return len(claims)


def judged(controller: Controller) -> bool:
    """Every node's outlook comes from a finished consolidation pass (nothing in progress)."""
    outlooks = [n.get("outlook") or {} for n in controller.get("/api/v1/nodes")["nodes"].values()]
    pending = ("has consolidation disabled", "no cheaper placement found yet")
    return bool(outlooks) and all(
        o.get("verdict") == "kept" and not any(p in o.get("reason", "") for p in pending) for o in outlooks
    )


def bound_by_kube_scheduler(env: KarpyEnv) -> set[str]:
    out = set()
    for event in env.events("Scheduled"):
        source = event.get("reportingComponent") or (event.get("source") or {}).get("component")
        if source == "default-scheduler":
            out.add(str((event.get("involvedObject") or {}).get("name")))
    return out


def check(env: KarpyEnv, expected: dict[str, str], to_bind: list[str], csi: FakeProvisioner) -> None:
    """Every volume rule held; `expected` pod → zone; `to_bind` pods (claims to bind) bound by kube-scheduler."""
    nodes, pods = env.nodes(), env.pods()
    problems = placement.volume_violations(nodes, pods, cluster_volumes(env))
    problems += placement.final_violations(nodes, pods)
    assert not problems, "\n".join(problems)
    zones = volume_zones(env)
    assert all(volume == node for volume, node in zones.values()), zones
    for name, zone in expected.items():
        assert zones[name][0] == zone, (name, zones[name])
    by_scheduler = bound_by_kube_scheduler(env)
    assert set(to_bind) <= by_scheduler, f"bound by karpy: {sorted(set(to_bind) - by_scheduler)}"
    assert not csi.errors, csi.errors
    until(lambda: env.consistent() == "", 30, "every instance with its node and every node with its instance")


@contextlib.contextmanager
def cluster_scoped(env: KarpyEnv, names: Names) -> Iterator[None]:
    """Storage classes, static volumes and CSINodes of this test, deleted afterwards."""
    try:
        yield
    finally:
        for kind, name in [
            (STORAGECLASSES, names.dynamic),
            (STORAGECLASSES, names.zone_a),
            (STORAGECLASSES, names.local),
            (VOLUMES, names.prebound),
            (VOLUMES, names.static),
        ]:
            with contextlib.suppress(NotFoundError, KubeError):
                env.kube.delete(kind, name)
        for csinode in env.kube.list(CSINODES).items:
            if csinode["metadata"].get("labels", {}).get("e2e") == env.namespace:
                with contextlib.suppress(NotFoundError, KubeError):
                    env.kube.delete(CSINODES, csinode["metadata"]["name"])


def test_volumes_decide_where_pods_run(karpy: KarpyEnv) -> None:
    env, ns = karpy, karpy.namespace
    names = Names(ns)
    with cluster_scoped(env, names), FakeProvisioner(env.kube) as csi:
        env.provisioner("default", requirements=[{"key": ZONE, "operator": "In", "values": ZONES}])
        env.apply(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [
                    storage_class(names.dynamic, DRIVER),
                    storage_class(names.zone_a, DRIVER, ["us-west-2a"]),
                    storage_class(names.local, "kubernetes.io/no-provisioner"),
                    static_volume(names.prebound, names.local, "us-west-2c", (ns, "prebound")),
                    static_volume(names.static, names.local, "us-west-2b"),
                ],
            }
        )
        controller = env.start("replica-a", *FAST)

        # 1. one batch
        ephemeral = {
            "name": "scratch",
            "ephemeral": {
                "volumeClaimTemplate": {
                    "spec": {
                        "storageClassName": names.dynamic,
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    }
                }
            },
        }
        env.apply(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [
                    statefulset(ns, "db", 3, names.dynamic, spread=True),
                    statefulset(ns, "static", 1, names.local),
                    claim(ns, "prebound", names.local, names.prebound),
                    claim(ns, "zonal", names.zone_a),
                    pod(ns, "prebound-user", [mount("prebound")]),
                    pod(ns, "zonal-user", [mount("zonal")]),
                    pod(ns, "scratch-user", [ephemeral]),
                    pod(ns, "orphan", [mount("nowhere")]),
                ],
            }
        )
        first = ["db-0", "db-1", "db-2", "static-0", "prebound-user", "zonal-user", "scratch-user"]
        until(lambda: placed(env, first), 150, "the first batch's pods Running with their claims Bound")
        to_bind = ["db-0", "db-1", "db-2", "static-0", "zonal-user", "scratch-user"]
        expected = {"prebound-user": "us-west-2c", "static-0": "us-west-2b", "zonal-user": "us-west-2a"}
        check(env, expected, to_bind, csi)
        assert {zone for zone, _ in (volume_zones(env)[f"db-{i}"] for i in range(3))} == set(ZONES)
        pending = until(
            lambda: controller.get("/api/v1/pods/pending")["pods"].get(f"{ns}/orphan", {}).get("reason"),
            30,
            "karpy's reason for the pod whose claim is missing",
        )
        assert f"persistentvolumeclaim {ns}/nowhere not found" in pending
        assert any(
            "nowhere" in e.get("message", "")
            for e in env.events("FailedScheduling")
            if (e.get("source") or {}).get("component") == "karpy"
        )
        launched_for = {
            p for d in controller.get("/api/v1/decisions?limit=1000") if d["action"] == "launched" for p in d["pods"]
        }
        assert launched_for and f"{ns}/orphan" not in launched_for

        # 2. a new controller, a second batch
        env.kill(controller)
        controller = env.start("replica-b", *FAST)
        env.kube.patch(STATEFULSETS, "db", {"spec": {"replicas": 5}}, ns)
        to_bind += ["db-3", "db-4"]
        until(lambda: placed(env, [*first, "db-3", "db-4"]), 150, "db-3 and db-4 Running with their claims Bound")
        check(env, expected, to_bind, csi)

        # 3. a CSINode attach limit reached on a node the next pod fits
        full = env.kube.get(PODS, "db-0", ns)["spec"]["nodeName"]
        attached = csi_claims_on(env, full)
        env.kube.create(
            CSINODES,
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": {"name": full, "labels": {"e2e": ns}},
                "spec": {"drivers": [{"name": DRIVER, "nodeID": full, "allocatable": {"count": attached}}]},
            },
        )
        # small enough for the node's room, in its zone: only the attach limit keeps it off that node
        in_zone = {ZONE: node_zone(env, full)}
        env.apply(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [
                    claim(ns, "limited", names.dynamic),
                    pod(ns, "limited-user", [mount("limited")], cpu="10m", nodeSelector=in_zone),
                ],
            }
        )
        to_bind.append("limited-user")
        until(lambda: placed(env, ["limited-user"]), 120, "the pod kept off the full node Running elsewhere")
        assert env.kube.get(PODS, "limited-user", ns)["spec"]["nodeName"] != full
        check(env, expected, to_bind, csi)

        # 4. the node of a stateful pod deleted
        db0_zone = volume_zones(env)["db-0"][0]
        gone = env.kube.get(PODS, "db-0", ns)["spec"]["nodeName"]
        env.kube.delete(NODES, gone)
        until(lambda: env.node_gone(gone), 90, f"node {gone} gone")

        def db0_back() -> bool:
            p = next((p for p in env.running("db") if p["metadata"]["name"] == "db-0"), None)
            return p is not None and p["spec"]["nodeName"] != gone and placed(env, ["db-0"])

        until(db0_back, 150, "db-0 Running again with its claim Bound")
        assert volume_zones(env)["db-0"] == (db0_zone, db0_zone)
        survivors = {p["metadata"]["name"] for p in env.pods()}  # bare pods of the deleted node are gone
        check(env, {k: v for k, v in expected.items() if k in survivors}, to_bind, csi)

        # 5. consolidation over the stateful pods alone: a pass judges every node (deleting or
        # replacing what it may), and no pod has left its volume's zone
        for name in ("prebound-user", "zonal-user", "scratch-user", "limited-user", "orphan"):
            with contextlib.suppress(NotFoundError):
                env.kube.delete(PODS, name, ns)
        until(lambda: len(env.pods()) == 6, 60, "only the stateful pods left")
        env.provisioner(
            "default", requirements=[{"key": ZONE, "operator": "In", "values": ZONES}], consolidation={"enabled": True}
        )
        until(lambda: judged(controller), 120, "a consolidation pass judging every node")
        stateful = [f"db-{i}" for i in range(5)] + ["static-0"]
        until(lambda: placed(env, stateful), 150, "the stateful pods Running after consolidation")
        check(env, {"static-0": "us-west-2b", "db-0": db0_zone}, [], csi)
