"""The existing nodes' set-up taken from a node source is the subset's own set-up (issue 21).

Property: over random fleets — topology spread on zone and hostname, required pod affinity and
anti-affinity (bound and pending pods), pods pinned by zonal volumes, DaemonSets (templates and
their bound pods), host ports, taints and startup taints, uninitialized, unmanaged and deleting
nodes, provisioner limits, nodes created at the same time — every solve over the source's nodes
less one node (each in turn), or less a random handful, with that node's pods and the pending
pods as the batch, gives the same result from the source as set up alone.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any

import pytest

from controller.core import labels as L
from controller.core.taints import Taint
from controller.scheduling import existing
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import (
    InstanceType,
    NodeSource,
    PodRequest,
    ProvisionerSpec,
    SchedulingInput,
    SchedulingResult,
    StateNode,
    VolumeObjects,
)
from tests.builders.scheduling import (
    ZONES,
    make_node,
    make_pod,
    make_provisioner,
    req,
    small_catalog,
    spread,
    term,
)
from tests.builders.volumes import claim, csinode, objects, storage_class, volume, with_claims, zone_affinity

APPS = ("web", "db", "cache")
TAINT = Taint("dedicated", "NoSchedule", "batch")
STARTUP = Taint("startup", "NoSchedule", "")
TYPES = (("m.large", "2", "8Gi", 10), ("m.xlarge", "4", "16Gi", 20), ("m.2xlarge", "8", "32Gi", 40))


@dataclasses.dataclass
class Fleet:
    nodes: list[StateNode]
    pending: list[PodRequest]
    provisioners: list[ProvisionerSpec]
    daemonsets: list[PodRequest]
    volumes: VolumeObjects
    catalog: list[InstanceType] = dataclasses.field(default_factory=small_catalog)  # one per fleet, as a pass has


def random_pod(rng: random.Random, name: str, claims: list[dict[str, Any]], pvs: list[dict[str, Any]]) -> PodRequest:
    app = rng.choice(APPS)
    labels = {"app": app}
    kind = rng.choice(("plain", "plain", "zone-spread", "host-spread", "anti-host", "anti-zone", "affinity",
                       "volume", "port", "tolerates"))  # fmt: skip
    args: dict[str, Any] = {"cpu": rng.choice(("250m", "500m", "1", "1500m")), "memory": "512Mi", "labels": labels}
    if kind == "zone-spread":
        args["spread"] = [spread(L.ZONE, labels, max_skew=rng.choice((1, 2)))]
    elif kind == "host-spread":
        args["spread"] = [spread(L.HOSTNAME, labels, when=rng.choice(("DoNotSchedule", "ScheduleAnyway")))]
    elif kind == "anti-host":
        args["anti_affinity"] = [term(L.HOSTNAME, labels)]
    elif kind == "anti-zone":
        args["anti_affinity"] = [term(L.ZONE, {"app": rng.choice(APPS)})]
    elif kind == "affinity":
        args["affinity"] = [term(L.ZONE, {"app": rng.choice(APPS)})]
    elif kind == "port":
        args["host_port"] = rng.choice((8080, 9090))
    elif kind == "tolerates":
        args["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}]
    pod = make_pod(name, **args)
    if kind == "volume":  # a claim bound to a volume in one zone: the pod may run only there
        zone = rng.choice(ZONES)
        claims.append(claim(f"c-{name}", volume=f"v-{name}"))
        pvs.append(volume(f"v-{name}", terms=zone_affinity(zone), claim_ref=("default", f"c-{name}")))
        pod = with_claims(pod, f"c-{name}")
    return pod


def random_fleet(seed: int) -> Fleet:
    rng = random.Random(seed)
    claims: list[dict[str, Any]] = []
    pvs: list[dict[str, Any]] = []
    provisioners = [make_provisioner("default", limits={"cpu": "200"} if rng.random() < 0.3 else None)]
    if rng.random() < 0.5:
        provisioners.append(make_provisioner("tainted", taints=[TAINT], startup_taints=[STARTUP], weight=10))
    daemonsets = []
    if rng.random() < 0.7:
        daemonsets.append(make_pod("ds-log", cpu="100m", memory="64Mi", owner_kind="DaemonSet"))
    if rng.random() < 0.4:
        daemonsets.append(make_pod("ds-gpu", cpu="200m", owner_kind="DaemonSet", node_selector={L.ARCH: "arm64"}))
    nodes = []
    for i in range(rng.randint(3, 9)):
        it, cpu, memory, max_pods = rng.choice(TYPES)
        prov = rng.choice([p.name for p in provisioners] + [None] * (rng.random() < 0.2))
        bound: list[PodRequest] = []
        used = 0.0
        for j in range(rng.randint(0, 8)):
            pod = random_pod(rng, f"p{i}-{j}", claims, pvs)
            size = pod.requests.get("cpu", 0) / 1000
            if used + size <= float(cpu) * 0.9:
                bound.append(dataclasses.replace(pod, node_name=f"n{i}"))
                used += size
        if daemonsets and rng.random() < 0.6:
            bound.append(dataclasses.replace(daemonsets[0], name=f"ds-log-n{i}", node_name=f"n{i}"))
        uninitialized = rng.random() < 0.15
        node = make_node(
            f"n{i}", provisioner=prov, instance_type=it, zone=rng.choice(ZONES), cpu=cpu, memory=memory,
            pods=max_pods, bound=bound, taints=[TAINT, STARTUP] if prov == "tainted" else [],
            initialized=not uninitialized, deleting=rng.random() < 0.1,
            created=f"2024-01-01T00:0{rng.randint(0, 3)}:00Z",
        )  # fmt: skip
        nodes.append(node)
    rng.shuffle(nodes)
    pending = [random_pod(rng, f"pending-{k}", claims, pvs) for k in range(rng.randint(0, 4))]
    if rng.random() < 0.3:
        pending.append(make_pod("pinned", required=[[req(L.ZONE, "In", ZONES[0])]]))
    limits = [csinode(n.name, rng.randint(1, 3)) for n in nodes if rng.random() < 0.5]
    vols = objects(claims=claims, volumes=pvs, classes=[storage_class()], csinodes=limits)
    return Fleet(nodes, pending, provisioners, daemonsets, vols)


def movable(node: StateNode) -> list[PodRequest]:
    return [p for p in node.pods if p.owner_kind != "DaemonSet" and not p.terminal]


def solve(fleet: Fleet, gone: Sequence[StateNode], source: NodeSource | None) -> SchedulingResult:
    names = {n.name for n in gone}
    pods = [p for n in gone for p in movable(n)] + fleet.pending
    nodes = [n for n in fleet.nodes if n.name not in names]
    inp = SchedulingInput(
        pods=pods, provisioners=fleet.provisioners, instance_types=fleet.catalog, nodes=nodes,
        daemonsets=fleet.daemonsets, volumes=fleet.volumes, node_source=source,
    )  # fmt: skip
    return schedule(inp)


def summary(result: SchedulingResult) -> dict[str, Any]:
    """Everything a caller reads of a result, as comparable values."""
    new = [
        (n.name, n.provisioner, sorted(map(str, n.requirements.values())), sorted(n.labels.items()), n.taints,
         [it.name for it in n.instance_type_options], [p.key for p in n.pods], sorted(n.requests.items()),
         sorted(n.daemon_requests.items()),
         n.launch and (n.launch.instance_type.name, n.launch.zone, n.launch.capacity_type, n.launch.price))
        for n in result.new_nodes
    ]  # fmt: skip
    return {
        "new": new,
        "existing": dict(result.existing_assignments),
        "unschedulable": dict(result.unschedulable),
        "reasons": {k: (r.text, r.clauses) for k, r in result.reasons.items()},
    }


@pytest.mark.parametrize("seed", range(40))
def test_every_candidate_solves_the_same_from_the_source_as_alone(seed: int) -> None:
    fleet = random_fleet(seed)
    source = NodeSource(tuple(fleet.nodes))
    rng = random.Random(seed)
    handfuls = [rng.sample(fleet.nodes, rng.randint(2, len(fleet.nodes))) for _ in range(3)]
    removals = [[n] for n in fleet.nodes] + handfuls
    for gone in removals:
        alone, drawn = solve(fleet, gone, None), solve(fleet, gone, source)
        assert summary(drawn) == summary(alone), [n.name for n in gone]


def test_the_random_fleets_hold_what_the_property_is_about() -> None:
    """Not vacuous: the fleets' solves place pods on existing and new nodes, leave some
    unschedulable, and hold every kind of constraint the docstring names."""
    fleets = [random_fleet(s) for s in range(40)]
    pods = [p for f in fleets for n in f.nodes for p in n.pods]
    assert any(c.topology_key == L.ZONE for p in pods for c in p.topology_spread)
    assert any(c.topology_key == L.HOSTNAME for p in pods for c in p.topology_spread)
    assert any(p.pod_anti_affinity for p in pods) and any(p.pod_affinity for p in pods)
    assert any(p.claims for p in pods) and any(p.host_ports for p in pods)
    assert any(p.owner_kind == "DaemonSet" for p in pods)
    assert any(not n.initialized for f in fleets for n in f.nodes)
    assert any(n.marked_for_deletion for f in fleets for n in f.nodes)
    results = [solve(f, [n], NodeSource(tuple(f.nodes))) for f in fleets for n in f.nodes]
    assert sum(bool(r.existing_assignments) for r in results) >= 20
    assert sum(bool(r.new_nodes) for r in results) >= 20
    assert sum(bool(r.unschedulable) for r in results) >= 5


def test_a_sweep_sets_the_source_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    build = existing.Rows.build

    def counting(nodes: Sequence[StateNode], context: existing.Context, batch_keys: set[str]) -> existing.Rows:
        built.append(len(nodes))
        return build(nodes, context, batch_keys)

    monkeypatch.setattr(existing.Rows, "build", staticmethod(counting))
    nodes = [make_node(f"n{i}", bound=[make_pod(f"p{i}", cpu="1", node_name=f"n{i}")]) for i in range(20)]
    fleet = Fleet(nodes, [], [make_provisioner()], [], VolumeObjects())
    source = NodeSource(tuple(nodes))
    for node in nodes:
        solve(fleet, [node], source)
    assert built == [20]  # the whole source once, no node set up again


def test_a_sweep_over_nodes_with_volumes_sets_the_source_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The attach limits `volumes.py` gives the nodes are given to the source's nodes once, and
    the solves still draw from it."""
    built: list[int] = []
    build = existing.Rows.build

    def counting(nodes: Sequence[StateNode], context: existing.Context, batch_keys: set[str]) -> existing.Rows:
        built.append(len(nodes))
        return build(nodes, context, batch_keys)

    monkeypatch.setattr(existing.Rows, "build", staticmethod(counting))
    claims, pvs, nodes = [], [], []
    for i in range(10):
        pod = with_claims(make_pod(f"p{i}", cpu="1", node_name=f"n{i}"), f"c{i}")
        claims.append(claim(f"c{i}", volume=f"v{i}"))
        pvs.append(volume(f"v{i}", terms=zone_affinity("test-zone-a"), claim_ref=("default", f"c{i}")))
        nodes.append(make_node(f"n{i}", bound=[pod]))
    vols = objects(claims=claims, volumes=pvs, classes=[storage_class()], csinodes=[csinode("n0", 1)])
    fleet = Fleet(nodes, [], [make_provisioner()], [], vols)
    source = NodeSource(tuple(nodes))
    for node in nodes:
        assert summary(solve(fleet, [node], source)) == summary(solve(fleet, [node], None))
    assert built.count(10) == 1  # the source once; each solve alone sets up its 9 nodes
    assert built.count(9) == 10


def test_nodes_not_from_the_source_or_a_batch_pod_bound_in_it_are_set_up_alone() -> None:
    bound = make_pod("moving", cpu="3", node_name="a")
    a = make_node("a", bound=[bound])
    b = make_node("b", bound=[make_pod("other", cpu="3", node_name="b")])
    source = NodeSource((a, b))
    stranger = dataclasses.replace(b)  # equal, but not the source's object
    for nodes, pods in (([a, stranger], [make_pod("new", cpu="2")]), ([a, b], [bound])):
        inp = SchedulingInput(pods=pods, provisioners=[make_provisioner()], instance_types=small_catalog(), nodes=nodes)
        alone = schedule(inp)
        drawn = schedule(dataclasses.replace(inp, node_source=source))
        assert summary(drawn) == summary(alone)
    # the bound pod in the batch leaves its node's usage: it goes back on "a" itself
    assert alone.existing_assignments == {"a": ("default/moving",)}
