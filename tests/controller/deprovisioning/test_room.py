"""The cheap test before single-node consolidation's simulation: never rejects what the
simulation would accept (issue 21)."""

from __future__ import annotations

import random

import pytest

from controller.deprovisioning.consolidation import compute_consolidation, consolidation_candidates
from controller.deprovisioning.room import Room
from controller.scheduling.scheduler import schedule
from controller.state.snapshot import NodeView
from tests.builders.deprovisioning import CATALOG, LARGE, MEDIUM, SMALL, at, make_inputs, make_node, make_pod
from tests.builders.deprovisioning import make_provisioner as provisioner_of


def random_fleet(seed: int) -> list[NodeView]:
    rng = random.Random(seed)
    nodes = []
    for i in range(rng.randint(2, 6)):
        it = rng.choice(CATALOG)
        cpu = it.allocatable["cpu"] / 1000
        pods, used = [], 0.0
        for j in range(rng.randint(1, 10)):  # mostly packed: many candidates cannot go
            size = rng.choice((0.5, 1.0, 1.5, 2.0, 3.0))
            if used + size <= cpu:
                pods.append(make_pod(f"p{i}-{j}", cpu=size))
                used += size
        nodes.append(make_node(f"n{i}", it, pods=pods, created=at(i)))
    return nodes


@pytest.mark.parametrize("capacity_types", [["on-demand"], ["spot", "on-demand"]], ids=["on-demand", "both"])
@pytest.mark.parametrize("seed", range(25))
def test_a_candidate_rejected_by_requests_is_one_the_simulation_rejects(seed: int, capacity_types: list[str]) -> None:
    inputs = make_inputs(random_fleet(seed), [provisioner_of(consolidation=True, capacity_types=capacity_types)])
    room = Room.of(inputs)
    cands, _ = consolidation_candidates(inputs)
    for cand in cands:
        if room.why_not(cand) is not None:
            assert compute_consolidation(inputs, [cand], schedule).command is None, cand.name


def test_the_random_fleets_hold_candidates_of_both_kinds() -> None:
    """The property above is not vacuous: its fleets hold candidates rejected by requests alone and
    candidates the simulation consolidates."""
    inputs = [make_inputs(random_fleet(s), [provisioner_of(consolidation=True, capacity_types=["on-demand"])])
              for s in range(25)]  # fmt: skip
    verdicts = [Room.of(i).why_not(c) is None for i in inputs for c in consolidation_candidates(i)[0]]
    assert verdicts.count(False) >= 10 and verdicts.count(True) >= 10


def test_a_full_node_with_nothing_cheaper_is_rejected_without_a_simulation() -> None:
    on_demand = [provisioner_of(consolidation=True, capacity_types=["on-demand"])]
    nodes = [make_node("a", MEDIUM, pods=[make_pod("x", cpu=3)]), make_node("b", MEDIUM, pods=[make_pod("y", cpu=3)])]
    inputs = make_inputs(nodes, on_demand)
    cands, _ = consolidation_candidates(inputs)
    assert all(Room.of(inputs).why_not(c) for c in cands)


def test_a_pod_with_room_elsewhere_or_a_cheaper_type_leaves_it_to_the_simulation() -> None:
    on_demand = [provisioner_of(consolidation=True, capacity_types=["on-demand"])]
    roomy = [make_node("a", LARGE, pods=[make_pod("x", cpu=1)]), make_node("b", LARGE, pods=[make_pod("y", cpu=1)])]
    shrinkable = [
        make_node("c", LARGE, pods=[make_pod("z", cpu=1.5)]),
        make_node("d", SMALL, pods=[make_pod("w", 1.5)]),
    ]
    for nodes in (roomy, shrinkable):
        inputs = make_inputs(nodes, on_demand)
        cands, _ = consolidation_candidates(inputs)
        assert Room.of(inputs).why_not(next(c for c in cands if c.name in ("a", "c"))) is None
