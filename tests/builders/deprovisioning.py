"""Builders with defaults for deprovisioning tests: cluster state's own views (`NodeView`,
`PodView`, `PdbView`, `ProvisionerView`) gathered into a pass's `Inputs`.

Deprovisioning decisions are tested with the real scheduler (`controller.scheduling.scheduler.
schedule`), so a consolidation test sees the replacements karpy would really launch. Times are
epoch seconds (`at(seconds)` after `T0`), as the decision code reads them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from controller.apis.provisioner import NodeSelectorRequirement, Provisioner
from controller.core import labels as L
from controller.core.requirements import IN, Requirement, Requirements
from controller.core.taints import Taint, Toleration
from controller.decisions import UNSCHEDULABLE
from controller.deprovisioning.types import Inputs
from controller.scheduling.types import InstanceType, LabelSelector, PodRequest, ProvisionerSpec, VolumeObjects
from controller.state.snapshot import NodeView, PdbView, PodView, ProvisionerView, Snapshot
from tests.builders.scheduling import make_instance_type

T0 = datetime(2024, 1, 1, tzinfo=UTC).timestamp()
GI = 1024**3
ZONE_A = "zone-a"


def at(seconds: float) -> float:
    return T0 + seconds


def instance_type(name: str, cpu: int, price: float, spot_price: float | None = None) -> InstanceType:
    """A deprovisioning-test instance type: family m5 (what a defaulted Provisioner allows),
    4 GiB, 110 pods, offered in `ZONE_A` only."""
    labels = {L.INSTANCE_CATEGORY: "m", L.INSTANCE_FAMILY: "m5"}
    return make_instance_type(
        name, cpu=cpu, memory_gib=4, pods=110, price=price, spot_price=spot_price, zones=(ZONE_A,), labels=labels
    )


SMALL = instance_type("small", 2, price=0.10, spot_price=0.03)
MEDIUM = instance_type("medium", 4, price=0.20, spot_price=0.06)
LARGE = instance_type("large", 8, price=0.40, spot_price=0.12)
CATALOG = (SMALL, MEDIUM, LARGE)


@dataclass(frozen=True)
class ProvisionerWithTypes:
    """A Provisioner's state view and the instance types the cloud offers it."""

    view: ProvisionerView
    instance_types: tuple[InstanceType, ...]

    @property
    def name(self) -> str:
        return self.view.name

    @property
    def provisioner(self) -> Provisioner:
        assert self.view.provisioner is not None
        return self.view.provisioner


def make_provisioner(
    name: str = "default", *, consolidation: bool = False, ttl_empty: int | None = None,
    ttl_expired: int | None = None, capacity_types: Sequence[str] | None = None,
    instance_types: Sequence[InstanceType] = CATALOG,
) -> ProvisionerWithTypes:  # fmt: skip
    reqs = Requirements([Requirement.new(L.PROVISIONER_NAME, IN, [name])])
    wire: tuple[NodeSelectorRequirement, ...] = ()
    if capacity_types is not None:
        reqs.add(Requirement.new(L.CAPACITY_TYPE, IN, capacity_types))
        wire = (NodeSelectorRequirement(L.CAPACITY_TYPE, IN, tuple(capacity_types)),)
    prov = Provisioner(
        name=name, consolidation_enabled=consolidation, ttl_seconds_after_empty=ttl_empty,
        ttl_seconds_until_expired=ttl_expired, requirements=wire,
    )  # fmt: skip
    view = ProvisionerView(name, {}, prov, ProvisionerSpec(name=name, requirements=reqs))
    return ProvisionerWithTypes(view, tuple(instance_types))


def make_pod(
    name: str, cpu: float = 1.0, *, namespace: str = "default", annotations: Mapping[str, str] | None = None,
    priority: int = 0, owner_kind: str = "ReplicaSet", labels: Mapping[str, str] | None = None,
    terminal: bool = False, deleting: bool = False,
) -> PodView:  # fmt: skip
    """A running pod (bound by `make_node`, or pending when passed as `make_inputs(pending=...)`)."""
    pod_labels = dict(labels or {"app": "web"})
    req = PodRequest(
        namespace=namespace, name=name, requests={"cpu": int(cpu * 1000), "pods": 1},
        labels=pod_labels, owner_kind=owner_kind, terminal=terminal,
    )  # fmt: skip
    return PodView(
        namespace=namespace, name=name, uid=f"uid-{namespace}-{name}", node_name="",
        phase="Succeeded" if terminal else "Running", labels=pod_labels, annotations=dict(annotations or {}),
        owner_kind=owner_kind, priority_class_name="", deletion_timestamp=T0 if deleting else None, created=T0,
        unschedulable=False, nominated_node_name="", tolerates_unschedulable=False, request=req,
        obj={"spec": {"priority": priority}},
    )  # fmt: skip


def make_node(
    name: str, instance_type: InstanceType = MEDIUM, *, pods: Iterable[PodView] = (), provisioner: str = "default",
    capacity_type: str = L.CAPACITY_TYPE_ON_DEMAND, zone: str = ZONE_A, created: float = T0,
    annotations: Mapping[str, str] | None = None, initialized: bool = True, nominated: bool = False,
    deleting: bool = False, marked_for_deletion: bool = False, labels: Mapping[str, str] | None = None,
) -> NodeView:  # fmt: skip
    """An owned node (unless `labels` replace its labels without a Provisioner), ready; initialized
    by default (`karpenter.sh/initialized`, as provisioning's initialization sets it)."""
    node_labels = {
        L.PROVISIONER_NAME: provisioner, L.CAPACITY_TYPE: capacity_type, L.ZONE: zone,
        L.INSTANCE_TYPE: instance_type.name, L.HOSTNAME: name,
    }  # fmt: skip
    if labels is not None:
        node_labels = dict(labels)
    if initialized:
        node_labels.setdefault(L.INITIALIZED, "true")
    return NodeView(
        name=name, provider_id="", labels=node_labels, annotations=dict(annotations or {}), taints=(),
        capacity=dict(instance_type.capacity), allocatable=dict(instance_type.allocatable), unschedulable=False,
        deletion_timestamp=created if deleting else None, created=created, finalizers=(), ready=True, obj={},
        marked_for_deletion=marked_for_deletion or deleting, nominated=nominated,
        pods=tuple(dataclasses.replace(p, node_name=name) for p in pods),
    )  # fmt: skip


def make_inputs(
    nodes: Iterable[NodeView], provisioners: Iterable[ProvisionerWithTypes] | None = None, *, now: float = T0,
    pdbs: Iterable[PdbView] = (), pending: Iterable[PodView] = (), consolidated: bool = False,
    volumes: VolumeObjects | None = None, queued: Iterable[PodView] = (), evaluations: Mapping[str, str] | None = None,
) -> Inputs:  # fmt: skip
    """One pass's inputs: the nodes (with their pods), the provisioners and their types, pending
    pods (marked `Unschedulable` by kube-scheduler) and `queued` ones (unbound, not tried yet).
    `evaluations`: pod key → its last provisioning evaluation's outcome; by default each pending
    pod's is unschedulable (karpy found no room: no scale-up under way, `Inputs.scale_up`)."""
    provs = list(provisioners) if provisioners is not None else [make_provisioner()]
    node_list = list(nodes)
    waiting = [dataclasses.replace(p, unschedulable=True, scheduler_tried=True) for p in pending]
    pods = {p.key: p for p in (*(p for n in node_list for p in n.pods), *waiting, *queued)}
    state = Snapshot(
        synced=True, now=now, pods=pods, nodes={n.name: n for n in node_list},
        provisioners={p.name: p.view for p in provs}, pdbs=tuple(pdbs), volumes=volumes or VolumeObjects(),
    )  # fmt: skip
    if evaluations is None:
        evaluations = {p.key: UNSCHEDULABLE for p in waiting}
    return Inputs.of(state, {p.name: p.instance_types for p in provs}, consolidated, evaluations=evaluations)


def make_pdb(name: str = "pdb", allowed: int = 0, namespace: str = "default", app: str = "web") -> PdbView:
    return PdbView(namespace, name, LabelSelector(match_labels=(("app", app),)), allowed, {})


def later(inputs: Inputs, now: float) -> Inputs:
    """The same inputs, read at `now`."""
    return dataclasses.replace(inputs, state=dataclasses.replace(inputs.state, now=now))


HALF_COST = {L.POD_DELETION_COST: str(-(2**26))}
"""A pod's annotations giving it an eviction cost of 0.5 (1 + deletion cost / 2^27)."""


def cheap_prefix_and_dear_node() -> Inputs:
    """Three mediums whose 2.5-cpu pods are cheap to disrupt (a multi-node prefix: one large replaces
    them, $0.20/h for 4.5 of disruption; none fits on another) and a large node with one 1-cpu pod,
    deletable ($0.40/h for 2); the large node is tainted so the mediums' pods cannot move there."""
    nodes = [
        make_node(f"cheap{i}", MEDIUM, pods=[make_pod(f"c{i}", cpu=2.5, annotations=HALF_COST)], created=at(i))
        for i in range(3)
    ]
    pod = make_pod("d")
    assert pod.request is not None
    tolerates = (Toleration("dedicated", "Exists"),)
    tolerant = dataclasses.replace(pod, request=dataclasses.replace(pod.request, tolerations=tolerates))
    dear = make_node("dear", LARGE, pods=[tolerant], created=at(5))
    tainted = dataclasses.replace(dear, taints=(Taint("dedicated", "x", "NoSchedule"),))
    on_demand = [make_provisioner(consolidation=True, capacity_types=["on-demand"])]
    return make_inputs([*nodes, tainted], on_demand)


ZONE_B = "zone-b"
ZONAL_SMALL = make_instance_type(
    "zonal-small", cpu=2, memory_gib=4, pods=110, price=0.10, zones=(ZONE_A, ZONE_B),
    labels={L.INSTANCE_CATEGORY: "m", L.INSTANCE_FAMILY: "m5"},
)  # fmt: skip
ZONAL_LARGE = make_instance_type(
    "zonal-large", cpu=8, memory_gib=4, pods=110, price=0.40, zones=(ZONE_A, ZONE_B),
    labels={L.INSTANCE_CATEGORY: "m", L.INSTANCE_FAMILY: "m5"},
)  # fmt: skip


def in_zone(pod: PodView, zone: str) -> PodView:
    """`pod` with a node selector on `zone`."""
    assert pod.request is not None
    return dataclasses.replace(pod, request=dataclasses.replace(pod.request, node_selector={L.ZONE: zone}))


def kube_scheduler_spill(candidate: InstanceType = ZONAL_LARGE) -> Inputs:
    """Where the plan and kube-scheduler part ways (issue 21): node "a" (zone-a, large, 6 of 8 CPUs
    used, the oldest), node "b" (zone-b, zonal-small, 0.5 of 2 CPUs used) and the candidate "c"
    (zone-b, of `candidate`'s type) with pods "u" (1 CPU, anywhere) and "k" (0.75 CPU, zone-b
    only). The plan's first fit puts "u" on "a" and "k" on "b": a delete. kube-scheduler's scoring
    puts "u" on "b" (the most room left, as a fraction: 0.25 against 0.125), and then "k" fits
    nowhere in zone-b: it needs a new zonal-small ($0.10/h)."""
    nodes = [
        make_node("a", LARGE, pods=[make_pod("x", cpu=6)], created=at(0)),
        make_node("b", ZONAL_SMALL, pods=[make_pod("y", cpu=0.5)], zone=ZONE_B, created=at(1)),
        make_node("c", candidate, pods=[make_pod("u", cpu=1), in_zone(make_pod("k", cpu=0.75), ZONE_B)],
                  zone=ZONE_B, created=at(2)),
    ]  # fmt: skip
    types = (*CATALOG, ZONAL_SMALL, ZONAL_LARGE)
    prov = make_provisioner(consolidation=True, capacity_types=["on-demand"], instance_types=types)
    return make_inputs(nodes, [prov])
