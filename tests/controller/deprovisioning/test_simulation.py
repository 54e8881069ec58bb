"""A pass's simulations draw their nodes from `Inputs.node_source` (issue 21): for every candidate
of random fleets, consolidation decides the same as when each simulation sets its nodes up alone."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from controller.core import labels as L
from controller.deprovisioning.consolidation import Consolidation, compute_consolidation, consolidation_candidates
from controller.deprovisioning.simulation import (
    PROVISIONING,
    Spill,
    planned_nodes,
    simulate,
    spill,
    unplaced_by_provisioning,
)
from controller.deprovisioning.types import Command, Inputs
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import SchedulingInput, SchedulingResult, VolumeObjects
from controller.state.snapshot import NodeView, PodView
from tests.builders import scheduling as sched
from tests.builders.deprovisioning import (
    CATALOG,
    ZONE_A,
    at,
    kube_scheduler_spill,
    make_inputs,
    make_node,
    make_pod,
    make_provisioner,
)
from tests.builders.volumes import claim, objects, storage_class, volume, with_claims, zone_affinity

ZONES = (ZONE_A, "zone-b", "zone-c")


def alone(inp: SchedulingInput) -> SchedulingResult:
    """The scheduler with every simulation setting its nodes up by itself."""
    return schedule(dataclasses.replace(inp, node_source=None))


def rich_pod(rng: random.Random, name: str, vols: dict[str, list[dict[str, Any]]]) -> PodView:
    app = rng.choice(("web", "db"))
    labels = {"app": app}
    args: dict[str, Any] = {"cpu": rng.choice(("500m", "1", "1500m")), "labels": labels}
    kind = rng.choice(("plain", "zone-spread", "host-spread", "anti", "volume"))
    if kind == "zone-spread":
        args["spread"] = [sched.spread(L.ZONE, labels)]
    elif kind == "host-spread":
        args["spread"] = [sched.spread(L.HOSTNAME, labels)]
    elif kind == "anti":
        args["anti_affinity"] = [sched.term(L.HOSTNAME, labels)]
    request = sched.make_pod(name, **args)
    if kind == "volume":
        vols["claims"].append(claim(f"c-{name}", volume=f"v-{name}"))
        terms = zone_affinity(rng.choice(ZONES))
        vols["volumes"].append(volume(f"v-{name}", terms=terms, claim_ref=("default", f"c-{name}")))
        request = with_claims(request, f"c-{name}")
    view = make_pod(name, labels=labels)
    return dataclasses.replace(view, request=dataclasses.replace(request, requests={**request.requests, "pods": 1}))


def random_fleet(seed: int) -> tuple[list[NodeView], VolumeObjects]:
    rng = random.Random(seed)
    vols: dict[str, list[dict[str, Any]]] = {"claims": [], "volumes": []}
    nodes = []
    for i in range(rng.randint(3, 8)):
        it = rng.choice(CATALOG)
        pods = [rich_pod(rng, f"p{i}-{j}", vols) for j in range(rng.randint(0, 3))]
        if rng.random() < 0.5:
            pods.append(make_pod(f"ds-{i}", cpu=0.1, owner_kind="DaemonSet"))
        nodes.append(make_node(f"n{i}", it, pods=pods, zone=rng.choice(ZONES), created=at(rng.randint(0, 2)),
                               initialized=rng.random() > 0.1, marked_for_deletion=rng.random() < 0.1))  # fmt: skip
    return nodes, objects(claims=vols["claims"], volumes=vols["volumes"], classes=[storage_class()])


def decision(c: Consolidation) -> tuple[Any, ...]:
    cmd = c.command
    if cmd is None:
        return (c.why_not,)
    replacements = [(r.name, [it.name for it in r.instance_type_options], [p.key for p in r.pods])
                    for r in cmd.replacements]  # fmt: skip
    return (cmd.action, [x.name for x in cmd.candidates], replacements)


def fleet_inputs(seed: int) -> Inputs:
    nodes, vols = random_fleet(seed)
    rng = random.Random(seed)
    pending = [rich_pod(rng, f"pending-{k}", {"claims": [], "volumes": []}) for k in range(rng.randint(0, 2))]
    return make_inputs(nodes, [make_provisioner(consolidation=True)], pending=pending, volumes=vols)


@pytest.mark.parametrize("seed", range(30))
def test_every_candidate_decides_the_same_from_the_pass_source_as_alone(seed: int) -> None:
    inputs = fleet_inputs(seed)
    cands, _ = consolidation_candidates(inputs)
    for cand in cands:
        assert decision(compute_consolidation(inputs, [cand], schedule)) == decision(
            compute_consolidation(inputs, [cand], alone)
        ), cand.name
    for k in range(2, len(cands) + 1):  # multi-node's prefixes
        assert decision(compute_consolidation(inputs, cands[:k], schedule)) == decision(
            compute_consolidation(inputs, cands[:k], alone)
        )


def test_the_random_fleets_hold_deletions_replacements_and_refusals() -> None:
    """Not vacuous: the property's candidates are deleted, replaced and refused."""
    found = []
    for seed in range(30):
        inputs = fleet_inputs(seed)
        cands, _ = consolidation_candidates(inputs)
        found += [decision(compute_consolidation(inputs, [c], schedule))[0] for c in cands]
    assert found.count("delete") >= 5 and found.count("replace") >= 5
    assert sum(isinstance(x, str) and x not in ("delete", "replace") for x in found) >= 5


def test_the_simulation_draws_its_nodes_from_the_pass_source() -> None:
    nodes = [make_node(f"n{i}", pods=[make_pod(f"p{i}")]) for i in range(3)]
    inputs = make_inputs(nodes, [make_provisioner(consolidation=True)])
    seen: list[SchedulingInput] = []

    def recording(inp: SchedulingInput) -> SchedulingResult:
        seen.append(inp)
        return schedule(inp)

    cands, _ = consolidation_candidates(inputs)
    for cand in cands:
        sim = simulate(inputs, [cand], recording)
        assert sim is not None and sim.all_scheduled
    source = inputs.node_source
    assert [n.name for n in source.nodes] == ["n0", "n1", "n2"]
    for inp, cand in zip(seen, cands, strict=True):
        assert inp.node_source is source
        assert all(any(n is s for s in source.nodes) for n in inp.nodes)
        assert cand.name not in {n.name for n in inp.nodes}


CONSOLIDATING = [make_provisioner(consolidation=True, capacity_types=["on-demand"])]


def replaced_large() -> tuple[Inputs, Command]:
    """A large node's 3 CPUs of pods, and the command replacing it with a medium."""
    node = make_node("n0", CATALOG[2], pods=[make_pod("a", cpu=1.5), make_pod("b", cpu=1.5)])
    inputs = make_inputs([node], CONSOLIDATING)
    cands, _ = consolidation_candidates(inputs)
    cmd = compute_consolidation(inputs, cands, schedule).command
    assert cmd is not None and len(cmd.replacements) == 1
    return inputs, cmd


def test_planned_replacements_are_the_nodes_they_launch_as_empty_and_initialized() -> None:
    _, cmd = replaced_large()
    new = cmd.replacements[0]
    assert new.launch is not None
    (planned,) = planned_nodes([new])
    assert planned.labels[L.INSTANCE_TYPE] == new.launch.instance_type.name and planned.labels[L.ZONE] == ZONE_A
    assert planned.labels[L.PROVISIONER_NAME] == "default" and planned.labels[L.HOSTNAME] == planned.name
    assert planned.allocatable == dict(new.launch.instance_type.allocatable) and not planned.pods
    assert planned.initialized and not planned.marked_for_deletion


def test_provisioning_places_the_pods_on_the_planned_replacement() -> None:
    inputs, cmd = replaced_large()
    assert unplaced_by_provisioning(inputs, cmd, schedule) == 0
    sim = simulate(inputs, cmd.candidates, schedule, PROVISIONING, planned_nodes(cmd.replacements))
    assert sim is not None and not sim.new_nodes and set(sim.result.existing_assignments) == {"planned-replacement-0"}
    bare = Command("consolidation", cmd.candidates)  # no replacement up: both pods need a new node
    assert unplaced_by_provisioning(inputs, bare, schedule) == 2


def test_kube_scheduler_puts_a_moved_pod_on_the_emptiest_node_and_the_rest_may_spill() -> None:
    inputs = kube_scheduler_spill()
    cands, _ = consolidation_candidates(inputs)
    (cand,) = [c for c in cands if c.name == "c"]
    planned = simulate(inputs, [cand], schedule)  # the plan's first fit: "u" on "a", "k" on "b"
    assert planned is not None and planned.all_scheduled and not planned.new_nodes
    assert dict(planned.result.existing_assignments) == {"a": ("default/u",), "b": ("default/k",)}
    # kube-scheduler: "u" on "b" (most room left), so "k" needs a new zone-b node
    assert spill(inputs, Command("consolidation", (cand,)), schedule) == Spill(1, 0.10)


def test_nothing_spills_when_kube_scheduler_finds_room_for_every_moved_pod() -> None:
    inputs, cmd = replaced_large()  # both pods onto the empty replacement, which kube-scheduler fills too
    assert not spill(inputs, cmd, schedule)
    bare = Command("consolidation", cmd.candidates)  # without its replacement: both spill, onto one new node
    found = spill(inputs, bare, schedule)
    assert found.pods == 2 and found.price == pytest.approx(0.20)
