"""Builders with defaults for deprovisioning tests (the decision inputs of `types.py`).

Deprovisioning decisions are tested with the real scheduler (`controller.scheduling.scheduler.
schedule`), so a consolidation test sees the replacements karpy would really launch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from controller.apis.provisioner import Provisioner
from controller.core import labels as L
from controller.core.requirements import IN, Requirement, Requirements
from controller.deprovisioning.types import DisruptionBudget, NodeInfo, PodInfo, ProvisionerInfo, Snapshot
from controller.scheduling.types import (
    InstanceType,
    LabelSelector,
    PodRequest,
    ProvisionerSpec,
    StateNode,
)
from tests.builders.scheduling import make_instance_type

T0 = datetime(2024, 1, 1, tzinfo=UTC)
GI = 1024**3
ZONE_A = "zone-a"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


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


def make_provisioner(
    name: str = "default",
    *,
    consolidation: bool = False,
    ttl_empty: int | None = None,
    ttl_expired: int | None = None,
    capacity_types: Sequence[str] | None = None,
    instance_types: Sequence[InstanceType] = CATALOG,
) -> ProvisionerInfo:
    reqs = Requirements([Requirement.new(L.PROVISIONER_NAME, IN, [name])])
    wire: tuple[dict[str, object], ...] = ()
    if capacity_types is not None:
        reqs.add(Requirement.new(L.CAPACITY_TYPE, IN, capacity_types))
        wire = ({"key": L.CAPACITY_TYPE, "operator": "In", "values": list(capacity_types)},)
    prov = Provisioner(
        name=name,
        consolidation_enabled=consolidation,
        ttl_seconds_after_empty=ttl_empty,
        ttl_seconds_until_expired=ttl_expired,
        requirements=wire,
    )
    return ProvisionerInfo(prov, ProvisionerSpec(name=name, requirements=reqs), tuple(instance_types))


def make_pod(
    name: str,
    cpu: float = 1.0,
    *,
    namespace: str = "default",
    annotations: Mapping[str, str] | None = None,
    priority: int = 0,
    owner_kind: str = "ReplicaSet",
    labels: Mapping[str, str] | None = None,
    terminal: bool = False,
    deleting: bool = False,
) -> PodInfo:
    req = PodRequest(
        namespace=namespace,
        name=name,
        requests={"cpu": int(cpu * 1000), "pods": 1},
        labels=dict(labels or {"app": "web"}),
        owner_kind=owner_kind,
        terminal=terminal,
    )
    return PodInfo(req, dict(annotations or {}), priority, deleting)


def make_node(
    name: str,
    instance_type: InstanceType = MEDIUM,
    *,
    pods: Iterable[PodInfo] = (),
    provisioner: str = "default",
    capacity_type: str = L.CAPACITY_TYPE_ON_DEMAND,
    zone: str = ZONE_A,
    created: datetime = T0,
    annotations: Mapping[str, str] | None = None,
    initialized: bool = True,
    nominated: bool = False,
    deleting: bool = False,
    marked_for_deletion: bool = False,
    labels: Mapping[str, str] | None = None,
) -> NodeInfo:
    pod_list = tuple(pods)
    node_labels = {
        L.PROVISIONER_NAME: provisioner,
        L.CAPACITY_TYPE: capacity_type,
        L.ZONE: zone,
        L.INSTANCE_TYPE: instance_type.name,
        L.HOSTNAME: name,
    }
    if labels is not None:
        node_labels = dict(labels)
    state = StateNode(
        name=name,
        labels=node_labels,
        allocatable=instance_type.allocatable,
        capacity=dict(instance_type.capacity),
        pods=tuple(p.request for p in pod_list),
        initialized=initialized,
        marked_for_deletion=marked_for_deletion,
    )
    return NodeInfo(state, created, dict(annotations or {}), pod_list, deleting, nominated)


def make_snapshot(
    nodes: Iterable[NodeInfo],
    provisioners: Iterable[ProvisionerInfo] | None = None,
    *,
    now: datetime = T0,
    pdbs: Iterable[DisruptionBudget] = (),
    pending: Iterable[PodRequest] = (),
    consolidated: bool = False,
) -> Snapshot:
    provs = list(provisioners) if provisioners is not None else [make_provisioner()]
    return Snapshot(now, tuple(nodes), {p.name: p for p in provs}, tuple(pdbs), tuple(pending), (), consolidated)


def make_pdb(name: str = "pdb", allowed: int = 0, namespace: str = "default", app: str = "web") -> DisruptionBudget:
    return DisruptionBudget(namespace, name, LabelSelector(match_labels=(("app", app),)), allowed)
