"""`bindcheck.refusal`: what karpy binds itself, re-checked against the node as it is now."""

from __future__ import annotations

from typing import Any

import pytest

from controller.clock import FakeClock
from controller.kube.resources import CLAIMS, CSINODES, NODES, PODS, PROVISIONERS, STORAGECLASSES, VOLUMES, WATCHED
from controller.provisioning.bindcheck import BindContext, refusal
from controller.scheduling.pods import pod_request
from controller.state.cluster import ClusterState
from tests.builders.volumes import claim, csinode, storage_class, volume, zone_affinity
from tests.builders.wire import make_node, make_pod, make_provisioner

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"


def held(name: str = "n1", **kw: Any) -> dict[str, Any]:
    node = make_node(name, cpu="2", memory="4Gi", pods="10", **kw)
    node["metadata"]["annotations"] = {"karpy.sh/binding-hold": "true"}
    node["metadata"]["labels"][HOST] = name
    node["spec"]["unschedulable"] = True
    return node


def term(app: str, key: str) -> dict[str, Any]:
    return {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}}


def anti(app: str, key: str) -> dict[str, Any]:
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(app, key)]}}}


def affine(app: str, key: str) -> dict[str, Any]:
    return {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(app, key)]}}}


def spread(app: str, key: str, skew: int = 1) -> dict[str, Any]:
    c = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": app}}}  # fmt: skip
    return {"topologySpreadConstraints": [c]}


def check(objects: list[tuple[Any, dict[str, Any]]], pod: str = "p", node: str = "n1",
          placed: tuple[dict[str, Any], ...] = (), daemonsets: tuple[dict[str, Any], ...] = ()) -> str:  # fmt: skip
    clock = FakeClock()
    state = ClusterState(clock)
    by_kind: dict[str, list[dict[str, Any]]] = {k.name: [] for k in WATCHED}
    by_kind[PROVISIONERS.name].append(make_provisioner("default"))
    for kind, obj in objects:
        by_kind[kind.name].append(obj)
    for name, items in by_kind.items():
        state.replace(name, items)
    ctx = BindContext.of(state.snapshot(), [pod_request(d) for d in daemonsets])
    return refusal(ctx, f"default/{pod}", node, [pod_request(p) for p in placed])


def mounting(*claims: str, node: str = "") -> dict[str, Any]:
    volumes = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    return make_pod("q" if node else "p", node=node, volumes=volumes)


def in_zone(zone: str) -> dict[str, Any]:
    node = held()
    node["metadata"]["labels"][ZONE] = zone
    return node


def pinned(name: str = "p", node: str = "", zone: str = "zone-a", gated: bool = False, **extra: Any) -> dict[str, Any]:
    """A zonal-spread pod pinned to `zone` by its node selector (as karpy pins a gated pod)."""
    constraint = {**spread("s", ZONE)["topologySpreadConstraints"][0], **extra}
    pod = make_pod(name, labels={"app": "s"}, node=node, nodeSelector={ZONE: zone},
                   topologySpreadConstraints=[constraint])  # fmt: skip
    if gated:
        pod["spec"]["schedulingGates"] = [{"name": "karpy.sh/topology-spread"}]
    return pod


BOUND_IN_C = [
    (CLAIMS, claim("data", volume="pv")),
    (VOLUMES, volume("pv", terms=zone_affinity("zone-c"), claim_ref=("default", "data"))),
    (STORAGECLASSES, storage_class()),
]

CASES: dict[str, tuple[list[tuple[Any, dict[str, Any]]], str]] = {
    "a bound volume in the node's zone": ([(NODES, in_zone("zone-c")), (PODS, mounting("data")), *BOUND_IN_C], ""),
    "a bound volume in another zone": (
        [(NODES, in_zone("zone-a")), (PODS, mounting("data")), *BOUND_IN_C],
        "its volumes allow only zone zone-c",
    ),
    "a claim still to bind is left to kube-scheduler": (
        [(NODES, held()), (PODS, mounting("later")), (CLAIMS, claim("later")), (STORAGECLASSES, storage_class())],
        "kube-scheduler binds the pod",
    ),
    "a missing claim": ([(NODES, held()), (PODS, mounting("gone"))], "persistentvolumeclaim default/gone not found"),
    "the node's CSINode attach limit": (
        [
            (NODES, in_zone("zone-c")),
            (PODS, mounting("data")),
            *BOUND_IN_C,
            (CSINODES, csinode("n1", 1)),
            (PODS, mounting("other", node="n1")),
            (CLAIMS, claim("other", volume="pv-o")),
            (VOLUMES, volume("pv-o", claim_ref=("default", "other"))),
        ],
        "can attach 1 ebs.csi.aws.com volume(s); it would need 2",
    ),
    "a plain pod on a held node": ([(NODES, held()), (PODS, make_pod("p"))], ""),
    "a node kube-scheduler may also use": ([(NODES, make_node("n1")), (PODS, make_pod("p"))], "not held by karpy"),
    "already bound elsewhere": ([(NODES, held()), (PODS, make_pod("p", node="n2"))], "no longer pending"),
    "zonal spread is left to kube-scheduler": (
        [(NODES, held()), (PODS, make_pod("p", labels={"app": "s"}, **spread("s", ZONE)))],
        "topology spread on",
    ),
    # karpy's pin (spreadpin.py): kube-scheduler counts the spread over the pinned zone alone
    "a zonal spread pinned to the node's zone": (
        [(NODES, in_zone("zone-a")), (PODS, pinned()), (PODS, pinned("q", node="n9", zone="zone-b"))],
        "",
    ),
    "a pinned zonal spread whose node affinity kube-scheduler ignores": (
        [(NODES, in_zone("zone-a")), (PODS, pinned(nodeAffinityPolicy="Ignore"))],
        "topology spread on",
    ),
    "a pinned zonal spread with minDomains above 1": (
        [(NODES, in_zone("zone-a")), (PODS, pinned(minDomains=3))],
        "topology spread on",
    ),
    # kube-scheduler placing q meanwhile without seeing p's binding is the order "q, then p": both accepted
    "a pinned pod another pending pod's unpinned zonal spread counts": (
        [(NODES, in_zone("zone-a")), (PODS, pinned()), (PODS, make_pod("q", labels={"app": "s"}, **spread("s", ZONE)))],
        "",
    ),
    "a pinned pod another pending pod's zonal anti-affinity selects": (
        [(NODES, in_zone("zone-a")), (PODS, pinned()), (PODS, make_pod("q", labels={"app": "x"}, **anti("s", ZONE)))],
        "another pod's",
    ),
    "a plain pod another pending pod's zonal spread counts": (
        [
            (NODES, held()),
            (PODS, make_pod("p", labels={"app": "s"})),
            (PODS, make_pod("q", labels={"app": "s"}, **spread("s", ZONE))),
        ],
        "another pod's",
    ),
    "a pinned pod a bound pod's unpinned zonal spread counts": (
        [
            (NODES, in_zone("zone-a")),
            (PODS, pinned()),
            (PODS, make_pod("q", labels={"app": "s"}, node="n9", **spread("s", ZONE))),
        ],
        "",
    ),
    "a pinned pod still gated": ([(NODES, in_zone("zone-a")), (PODS, pinned(gated=True))], "still gated"),
    "zonal anti-affinity is left to kube-scheduler": (
        [(NODES, held()), (PODS, make_pod("p", labels={"app": "a"}, **anti("a", ZONE)))],
        "anti-affinity on",
    ),
    "selected by another pod's zonal anti-affinity": (
        [
            (NODES, held()),
            (PODS, make_pod("p", labels={"app": "web"})),
            (PODS, make_pod("q", labels={"app": "x"}, **anti("web", ZONE))),
        ],
        "another pod's",
    ),
    "a startup taint not tolerated": (
        [
            (NODES, {**held(), "spec": {**held()["spec"], "taints": [{"key": "agent", "effect": "NoSchedule"}]}}),
            (PODS, make_pod("p")),
        ],
        "taint agent:NoSchedule",
    ),
    "no longer fits": (
        [(NODES, held()), (PODS, make_pod("p", cpu="1500m")), (PODS, make_pod("q", cpu="1", node="n1"))],
        "no longer fits",
    ),
    "hostname anti-affinity against a pod on the node": (
        [
            (NODES, held()),
            (PODS, make_pod("p", labels={"app": "a"}, **anti("a", HOST))),
            (PODS, make_pod("q", labels={"app": "a"}, node="n1")),
        ],
        "repels a pod on the node",
    ),
    "a pod on the node repels it": (
        [
            (NODES, held()),
            (PODS, make_pod("p", labels={"app": "web"})),
            (PODS, make_pod("q", labels={"app": "x"}, node="n1", **anti("web", HOST))),
        ],
        "the anti-affinity of",
    ),
    "hostname affinity without its partner on the node": (
        [(NODES, held()), (PODS, make_pod("p", labels={"app": "x"}, **affine("web", HOST)))],
        "not yet satisfied",
    ),
    "hostname affinity with its partner bound there": (
        [
            (NODES, held()),
            (PODS, make_pod("p", labels={"app": "x"}, **affine("web", HOST))),
            (PODS, make_pod("q", labels={"app": "web"}, node="n1")),
        ],
        "",
    ),
    "hostname spread over an empty eligible node": (
        [
            (NODES, held()),
            (NODES, make_node("n2")),
            (PODS, make_pod("p", labels={"app": "s"}, **spread("s", HOST))),
            (PODS, make_pod("q", labels={"app": "s"}, node="n1")),
        ],
        "skew 2",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_refusal(case: str) -> None:
    objects, want = CASES[case]
    got = check(objects)
    assert (want in got) if want else got == "", got


def test_pods_accepted_earlier_in_the_round_take_room() -> None:
    objects = [(NODES, held()), (PODS, make_pod("p", cpu="1500m"))]
    assert check(objects) == ""
    assert "no longer fits" in check(objects, placed=(make_pod("o", cpu="1"),))


def test_daemonset_pods_still_to_come_are_reserved() -> None:
    objects = [(NODES, held()), (PODS, make_pod("p", cpu="1500m"))]
    ds = make_pod("agent", cpu="600m", owner_kind="DaemonSet", tolerations=[{"operator": "Exists"}])
    assert "no longer fits" in check(objects, daemonsets=(ds,))
