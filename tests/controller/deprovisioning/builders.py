"""Builders with defaults for deprovisioning tests, and a small first-fit scheduler stand-in.

`fake_schedule` is a deliberately simple, deterministic bin-packer with the real scheduler's
contract (`SchedulingInput -> SchedulingResult`): pods by cpu descending, first existing owned
node that is not marked for deletion and has room, then new nodes from the first provisioner,
each packed while some instance type still fits; options cheapest first.
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
    Launch,
    NewNode,
    Offering,
    PodRequest,
    ProvisionerSpec,
    SchedulingInput,
    SchedulingResult,
    StateNode,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)
GI = 1024**3
ZONE_A = "zone-a"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def make_instance_type(
    name: str, cpu: int, memory_gi: int = 4, od: float | None = 0.1, spot: float | None = None,
    zones: Sequence[str] = (ZONE_A,),
) -> InstanceType:
    offerings = [Offering(z, L.CAPACITY_TYPE_ON_DEMAND, od) for z in zones if od is not None]
    offerings += [Offering(z, L.CAPACITY_TYPE_SPOT, spot) for z in zones if spot is not None]
    reqs = Requirements(
        [
            Requirement.new(L.INSTANCE_TYPE, IN, [name]),
            Requirement.new(L.ZONE, IN, zones),
            Requirement.new(L.CAPACITY_TYPE, IN, {o.capacity_type for o in offerings}),
        ]
    )
    return InstanceType(
        name=name,
        requirements=reqs,
        capacity={"cpu": cpu * 1000, "memory": memory_gi * GI, "pods": 110},
        overhead={},
        offerings=tuple(offerings),
    )


SMALL = make_instance_type("small", 2, od=0.10, spot=0.03)
MEDIUM = make_instance_type("medium", 4, od=0.20, spot=0.06)
LARGE = make_instance_type("large", 8, od=0.40, spot=0.12)
CATALOG = (SMALL, MEDIUM, LARGE)


def make_provisioner(
    name: str = "default", *, consolidation: bool = False, ttl_empty: int | None = None,
    ttl_expired: int | None = None, capacity_types: Sequence[str] | None = None,
    instance_types: Sequence[InstanceType] = CATALOG,
) -> ProvisionerInfo:
    reqs = Requirements([Requirement.new(L.PROVISIONER_NAME, IN, [name])])
    wire: tuple[dict[str, object], ...] = ()
    if capacity_types is not None:
        reqs.add(Requirement.new(L.CAPACITY_TYPE, IN, capacity_types))
        wire = ({"key": L.CAPACITY_TYPE, "operator": "In", "values": list(capacity_types)},)
    prov = Provisioner(
        name=name, consolidation_enabled=consolidation, ttl_seconds_after_empty=ttl_empty,
        ttl_seconds_until_expired=ttl_expired, requirements=wire,
    )
    return ProvisionerInfo(prov, ProvisionerSpec(name=name, requirements=reqs), tuple(instance_types))


def make_pod(
    name: str, cpu: float = 1.0, *, namespace: str = "default", annotations: Mapping[str, str] | None = None,
    priority: int = 0, owner_kind: str = "ReplicaSet", labels: Mapping[str, str] | None = None,
    terminal: bool = False, deleting: bool = False,
) -> PodInfo:
    req = PodRequest(
        namespace=namespace, name=name, requests={"cpu": int(cpu * 1000), "pods": 1},
        labels=dict(labels or {"app": "web"}), owner_kind=owner_kind, terminal=terminal,
    )
    return PodInfo(req, dict(annotations or {}), priority, deleting)


def make_node(
    name: str, instance_type: InstanceType = MEDIUM, *, pods: Iterable[PodInfo] = (), provisioner: str = "default",
    capacity_type: str = L.CAPACITY_TYPE_ON_DEMAND, zone: str = ZONE_A, created: datetime = T0,
    annotations: Mapping[str, str] | None = None, initialized: bool = True, nominated: bool = False,
    deleting: bool = False, marked_for_deletion: bool = False, labels: Mapping[str, str] | None = None,
) -> NodeInfo:
    pod_list = tuple(pods)
    node_labels = {
        L.PROVISIONER_NAME: provisioner, L.CAPACITY_TYPE: capacity_type, L.ZONE: zone,
        L.INSTANCE_TYPE: instance_type.name, L.HOSTNAME: name,
    }
    if labels is not None:
        node_labels = dict(labels)
    state = StateNode(
        name=name, labels=node_labels, allocatable=instance_type.allocatable, capacity=dict(instance_type.capacity),
        pods=tuple(p.request for p in pod_list), initialized=initialized, marked_for_deletion=marked_for_deletion,
    )
    return NodeInfo(state, created, dict(annotations or {}), pod_list, deleting, nominated)


def make_snapshot(
    nodes: Iterable[NodeInfo], provisioners: Iterable[ProvisionerInfo] | None = None, *, now: datetime = T0,
    pdbs: Iterable[DisruptionBudget] = (), pending: Iterable[PodRequest] = (), consolidated: bool = False,
) -> Snapshot:
    provs = list(provisioners) if provisioners is not None else [make_provisioner()]
    return Snapshot(now, tuple(nodes), {p.name: p for p in provs}, tuple(pdbs), tuple(pending), (), consolidated)


def make_pdb(name: str = "pdb", allowed: int = 0, namespace: str = "default", app: str = "web") -> DisruptionBudget:
    return DisruptionBudget(namespace, name, LabelSelector(match_labels=(("app", app),)), allowed)


# --- the scheduler stand-in -----------------------------------------------------------------------


def _fits(requests: Mapping[str, int], free: Mapping[str, int]) -> bool:
    return all(v <= free.get(k, 0) for k, v in requests.items())


def _sub(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) - v
    return out


def _add(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def _price(it: InstanceType, reqs: Requirements) -> float:
    ct = reqs.get_or_exists(L.CAPACITY_TYPE)
    return min((o.price for o in it.offerings if ct.has(o.capacity_type)), default=float("inf"))


def fake_schedule(inp: SchedulingInput) -> SchedulingResult:
    pods = sorted(inp.pods, key=lambda p: (-p.requests.get("cpu", 0), p.key))
    free: dict[str, dict[str, int]] = {}
    for n in inp.nodes:
        if n.provisioner_name and not n.marked_for_deletion:
            used: dict[str, int] = {}
            for p in n.pods:
                used = _add(used, p.requests)
            free[n.name] = _sub(n.allocatable, used)
    assigned: dict[str, list[str]] = {}
    leftover: list[PodRequest] = []
    for pod in pods:
        target = next((name for name, f in free.items() if _fits(pod.requests, f)), None)
        if target is None:
            leftover.append(pod)
            continue
        free[target] = _sub(free[target], pod.requests)
        assigned.setdefault(target, []).append(pod.key)
    new_nodes: list[NewNode] = []
    unschedulable: dict[str, str] = {}
    prov = inp.provisioners[0] if inp.provisioners else None
    types: Sequence[InstanceType] = []
    if prov is not None:
        its = inp.instance_types
        types = its[prov.name] if isinstance(its, Mapping) else its
    while leftover and prov is not None:
        reqs = prov.requirements
        options = [it for it in types if _price(it, reqs) < float("inf")]
        packed: list[PodRequest] = []
        total: dict[str, int] = {}
        for pod in list(leftover):
            candidate = _add(total, pod.requests)
            if any(_fits(candidate, it.allocatable) for it in options):
                packed.append(pod)
                total = candidate
                leftover.remove(pod)
        if not packed:
            break
        fitting = sorted(
            (it for it in options if _fits(total, it.allocatable)), key=lambda it: (_price(it, reqs), it.name)
        )
        cheapest = fitting[0]
        offer = min((o for o in cheapest.offerings if reqs.get_or_exists(L.CAPACITY_TYPE).has(o.capacity_type)),
                    key=lambda o: o.price)
        new_nodes.append(NewNode(
            name=f"new-{len(new_nodes)}", provisioner=prov.name, requirements=reqs.copy(), labels={}, taints=(),
            startup_taints=(), instance_type_options=tuple(fitting), pods=tuple(packed), requests=total,
            daemon_requests={}, launch=Launch(cheapest, offer.zone, offer.capacity_type, offer.price),
        ))
    for pod in leftover:
        unschedulable[pod.key] = "no instance type fits"
    return SchedulingResult(tuple(new_nodes), {k: tuple(v) for k, v in assigned.items()}, unschedulable)
