"""Builders and expectations for scheduling tests: small, readable worlds.

Instance types here have no overhead unless asked (allocatable = capacity), so placements can
be checked with mental arithmetic. Zones are test-zone-a/b/c.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from controller.core import labels as L
from controller.core.resources import parse_resources
from controller.core.taints import Taint
from controller.scheduling.instancetypes import new_instance_type
from controller.scheduling.pods import pod_request
from controller.scheduling.provisioners import template_requirements
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import (
    InstanceType,
    KubeletSpec,
    Offering,
    PodRequest,
    ProvisionerSpec,
    SchedulingInput,
    SchedulingResult,
    SchedulingSettings,
    StateNode,
    VolumeObjects,
)

ZONES = ("test-zone-a", "test-zone-b", "test-zone-c")
GIB = 2**30


def make_instance_type(
    name: str = "m.large",
    *,
    cpu: int = 2,
    memory_gib: int = 8,
    pods: int = 20,
    price: float = 0.10,
    spot_price: float | None = None,
    zones: Sequence[str] = ZONES,
    spot_zones: Sequence[str] | None = None,
    arch: str = "amd64",
    gpus: int = 0,
    overhead: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    unavailable: Iterable[tuple[str, str]] = (),
) -> InstanceType:
    """An instance type; spot offerings only when `spot_price` is given. A name without a dot
    (`small`) is its own family and size."""
    family, _, size = name.partition(".")
    size = size or name
    all_labels = {
        L.INSTANCE_TYPE: name,
        L.ARCH: arch,
        L.OS: "linux",
        L.INSTANCE_CATEGORY: family[0],
        L.INSTANCE_FAMILY: family,
        L.INSTANCE_GENERATION: "5",
        L.INSTANCE_SIZE: size,
        L.INSTANCE_CPU: str(cpu),
        L.INSTANCE_MEMORY: str(memory_gib * 1024),
        L.INSTANCE_PODS: str(pods),
        **(labels or {}),
    }
    capacity = {"cpu": cpu * 1000, "memory": memory_gib * GIB, "pods": pods}
    if gpus:
        capacity["nvidia.com/gpu"] = gpus
        all_labels[L.INSTANCE_GPU_COUNT] = str(gpus)
    off = set(unavailable)
    offerings = [Offering(z, "on-demand", price, (z, "on-demand") not in off) for z in zones]
    if spot_price is not None:
        offerings += [Offering(z, "spot", spot_price, (z, "spot") not in off) for z in (spot_zones or zones)]
    return new_instance_type(name, all_labels, capacity, parse_resources(overhead or {}), offerings)


def small_catalog() -> list[InstanceType]:
    """Five types: three sizes of one family, an arm64 type and a GPU type."""
    return [
        make_instance_type("m.large", cpu=2, memory_gib=8, pods=10, price=0.10),
        make_instance_type("m.xlarge", cpu=4, memory_gib=16, pods=20, price=0.20),
        make_instance_type("m.2xlarge", cpu=8, memory_gib=32, pods=40, price=0.40),
        make_instance_type("a.xlarge", cpu=4, memory_gib=16, pods=20, price=0.16, arch="arm64"),
        make_instance_type("g.2xlarge", cpu=8, memory_gib=32, pods=40, price=1.00, gpus=1),
    ]


def make_provisioner(
    name: str = "default",
    *,
    requirements: Sequence[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
    startup_taints: Sequence[Taint] = (),
    weight: int = 0,
    limits: Mapping[str, str] | None = None,
    kubelet: KubeletSpec | None = None,
) -> ProvisionerSpec:
    return ProvisionerSpec(
        name=name,
        requirements=template_requirements(name, requirements, labels or {}),
        weight=weight,
        labels=dict(labels or {}),
        taints=tuple(taints),
        startup_taints=tuple(startup_taints),
        kubelet=kubelet,
        limits=parse_resources(limits or {}),
    )


def req(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def make_pod(
    name: str = "p",
    *,
    namespace: str = "default",
    cpu: str = "100m",
    memory: str = "128Mi",
    gpus: int = 0,
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    required: Sequence[Sequence[Mapping[str, Any]]] = (),
    preferred: Sequence[tuple[int, Sequence[Mapping[str, Any]]]] = (),
    tolerations: Sequence[Mapping[str, str]] = (),
    affinity: Sequence[Mapping[str, Any]] = (),
    anti_affinity: Sequence[Mapping[str, Any]] = (),
    preferred_affinity: Sequence[tuple[int, Mapping[str, Any]]] = (),
    preferred_anti_affinity: Sequence[tuple[int, Mapping[str, Any]]] = (),
    spread: Sequence[Mapping[str, Any]] = (),
    host_port: int | None = None,
    node_name: str = "",
    owner_kind: str = "",
    created: str = "",
) -> PodRequest:
    """A pod built through `pod_request`, so the tests read the same shapes users write."""
    requests: dict[str, str] = {"cpu": cpu, "memory": memory}
    container: dict[str, Any] = {"name": "c", "resources": {"requests": requests}}
    if gpus:
        container["resources"]["limits"] = {"nvidia.com/gpu": str(gpus)}
    if host_port:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    spec: dict[str, Any] = {"containers": [container], "tolerations": list(tolerations)}
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    node_affinity: dict[str, Any] = {}
    if required:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": list(term)} for term in required]
        }
    if preferred:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": {"matchExpressions": list(term)}} for w, term in preferred
        ]
    aff: dict[str, Any] = {}
    if node_affinity:
        aff["nodeAffinity"] = node_affinity
    if affinity or preferred_affinity:
        aff["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(affinity),
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred_affinity
            ],
        }
    if anti_affinity or preferred_anti_affinity:
        aff["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(anti_affinity),
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred_anti_affinity
            ],
        }
    if aff:
        spec["affinity"] = aff
    if spread:
        spec["topologySpreadConstraints"] = list(spread)
    if node_name:
        spec["nodeName"] = node_name
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if owner_kind:
        meta["ownerReferences"] = [{"kind": owner_kind, "name": "owner", "controller": True}]
    if created:
        meta["creationTimestamp"] = created
    return pod_request({"metadata": meta, "spec": spec})


def term(key: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """A pod (anti-)affinity term selecting `labels` on topology `key`."""
    return {"topologyKey": key, "labelSelector": {"matchLabels": dict(labels)}}


def spread(key: str, labels: Mapping[str, str], max_skew: int = 1, when: str = "DoNotSchedule") -> dict[str, Any]:
    return {
        "topologyKey": key,
        "maxSkew": max_skew,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": dict(labels)},
    }


def make_node(
    name: str,
    *,
    provisioner: str | None = "default",
    instance_type: str = "m.xlarge",
    zone: str = "test-zone-a",
    capacity_type: str = "on-demand",
    cpu: str = "4",
    memory: str = "16Gi",
    pods: int = 20,
    taints: Sequence[Taint] = (),
    bound: Sequence[PodRequest] = (),
    labels: Mapping[str, str] | None = None,
    initialized: bool = True,
    deleting: bool = False,
    created: str = "",
) -> StateNode:
    all_labels = {
        L.INSTANCE_TYPE: instance_type,
        L.ZONE: zone,
        L.CAPACITY_TYPE: capacity_type,
        L.ARCH: "amd64",
        L.OS: "linux",
        L.HOSTNAME: name,
        **(labels or {}),
    }
    if provisioner is not None:
        all_labels[L.PROVISIONER_NAME] = provisioner
    resources = parse_resources({"cpu": cpu, "memory": memory, "pods": str(pods)})
    return StateNode(
        name=name,
        labels=all_labels,
        allocatable=resources,
        capacity=resources,
        taints=tuple(taints),
        pods=tuple(bound),
        initialized=initialized,
        marked_for_deletion=deleting,
        creation_timestamp=created,
    )


def run(
    pods: Sequence[PodRequest],
    provisioners: Sequence[ProvisionerSpec] | None = None,
    types: Sequence[InstanceType] | Mapping[str, Sequence[InstanceType]] | None = None,
    *,
    nodes: Sequence[StateNode] = (),
    daemonsets: Sequence[PodRequest] = (),
    max_instance_types: int = 60,
    volumes: VolumeObjects | None = None,
) -> SchedulingResult:
    return schedule(
        SchedulingInput(
            pods=pods,
            provisioners=provisioners if provisioners is not None else [make_provisioner()],
            instance_types=types if types is not None else small_catalog(),
            nodes=nodes,
            daemonsets=daemonsets,
            settings=SchedulingSettings(max_instance_types=max_instance_types),
            volumes=volumes,
        )
    )


def placements(result: SchedulingResult) -> dict[str, str]:
    """pod key → node name, over new and existing nodes."""
    out = {p.key: n.name for n in result.new_nodes for p in n.pods}
    for node, pods in result.existing_assignments.items():
        out.update(dict.fromkeys(pods, node))
    return out


def node_of(result: SchedulingResult, pod: str) -> str:
    where = placements(result).get(pod if "/" in pod else f"default/{pod}")
    assert where is not None, f"{pod} was not placed: {result.unschedulable}"
    return where


def new_node(result: SchedulingResult, name: str) -> Any:
    return next(n for n in result.new_nodes if n.name == name)


def zone_of(result: SchedulingResult, pod: str) -> str:
    node = new_node(result, node_of(result, pod))
    assert node.launch is not None
    return str(node.launch.zone)


def reason(result: SchedulingResult, pod: str) -> str:
    key = pod if "/" in pod else f"default/{pod}"
    assert key in result.unschedulable, f"{key} was placed on {placements(result).get(key)}"
    return result.unschedulable[key]
