"""A pod's constraints and their relaxation (`controller/scheduling/podstate.py`, spec §5.6)."""

from __future__ import annotations

import numpy as np

from controller.scheduling.podstate import PodState
from tests.builders.scheduling import make_pod, req, spread, term

ZONE = "topology.kubernetes.io/zone"


def state(**kwargs: object) -> PodState:
    return PodState(0, make_pod(**kwargs), np.zeros(3, dtype=np.int64))  # type: ignore[arg-type]


def test_requirements_are_selector_heaviest_preference_and_first_term() -> None:
    ps = state(
        node_selector={"team": "a"},
        required=[[req(ZONE, "In", "z1", "z2")], [req(ZONE, "In", "z3")]],
        preferred=[(1, [req("disk", "In", "ssd")]), (9, [req(ZONE, "In", "z2")])],
    )
    assert ps.requirements["team"].values == {"a"}
    assert ps.requirements[ZONE].values == {"z2"}
    assert "disk" not in ps.requirements


def test_relaxation_order() -> None:
    ps = state(
        required=[[req(ZONE, "In", "z1")], [req(ZONE, "In", "z2")]],
        preferred=[(1, [req("disk", "In", "ssd")]), (9, [req("disk", "In", "nvme")])],
        preferred_affinity=[(5, term(ZONE, {"app": "db"}))],
        preferred_anti_affinity=[(5, term(ZONE, {"app": "web"}))],
        spread=[spread(ZONE, {"app": "web"}, when="ScheduleAnyway"), spread(ZONE, {"app": "x"})],
    )
    steps = []
    while (step := ps.relax(tolerate_prefer_no_schedule=True)) is not None:
        steps.append(step)
    assert steps == [
        "required node affinity term",
        "preferred pod affinity term",
        "preferred pod anti-affinity term",
        "preferred node affinity term",
        "preferred node affinity term",
        "ScheduleAnyway topology spread",
        "PreferNoSchedule toleration",
    ]
    assert ps.requirements[ZONE].values == {"z2"}  # the last required term is never dropped
    assert [c.when_unsatisfiable for c in ps.spread] == ["DoNotSchedule"]


def test_heaviest_preferred_term_goes_first() -> None:
    ps = state(preferred=[(1, [req("disk", "In", "ssd")]), (9, [req("disk", "In", "nvme")])])
    assert ps.requirements["disk"].values == {"nvme"}
    ps.relax(False)
    assert ps.requirements["disk"].values == {"ssd"}
    ps.relax(False)
    assert "disk" not in ps.requirements
    assert ps.relax(False) is None  # without a PreferNoSchedule provisioner there is nothing left
