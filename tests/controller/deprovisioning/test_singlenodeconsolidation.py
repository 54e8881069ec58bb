"""Single-node consolidation: one node at a time, and why the others stay (spec §6.6)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from controller.core import labels as L
from controller.deprovisioning.singlenodeconsolidation import SingleNodeConsolidation
from controller.deprovisioning.types import Progress
from controller.scheduling.scheduler import schedule
from controller.state.snapshot import PodView
from tests.builders.deprovisioning import (
    LARGE,
    MEDIUM,
    SMALL,
    at,
    instance_type,
    make_inputs,
    make_node,
    make_pod,
    make_provisioner,
)

ON_DEMAND = [make_provisioner(consolidation=True, capacity_types=["on-demand"])]


def test_single_node_takes_the_cheapest_disruption_first() -> None:
    nodes = [
        make_node("two-pods", MEDIUM, pods=[make_pod("a"), make_pod("b")], created=at(0)),
        make_node("one-pod", MEDIUM, pods=[make_pod("c")], created=at(1)),
    ]
    out = SingleNodeConsolidation().compute(make_inputs(nodes, ON_DEMAND), schedule)
    assert out.command is not None and out.command.node_names == ("one-pod",)


def test_single_node_reports_why_a_node_stays() -> None:
    nodes = [make_node("n1", MEDIUM, pods=[make_pod("a", cpu=3)])]
    out = SingleNodeConsolidation().compute(make_inputs(nodes, ON_DEMAND), schedule)
    assert out.command is None
    # by requests alone (`room.py`): no other node, and no cheaper on-demand type holds 3 cpu
    assert [(e.node, e.reason) for e in out.events] == [("n1", "Unconsolidatable")]
    assert out.events[0].message == (
        "pod default/a fits on no other node and no instance type cheaper than $0.2/h holds the 1 pod(s) that would"
        " need a new node"
    )


def pinned(name: str, node: str, cpu: float) -> PodView:
    """A pod whose node selector names its node's host: it fits elsewhere by requests, but may
    not move (only the simulation can tell)."""
    pod = make_pod(name, cpu=cpu)
    assert pod.request is not None
    request = dataclasses.replace(pod.request, node_selector={L.HOSTNAME: node})
    return dataclasses.replace(pod, request=request)


def test_do_not_evict_pod_keeps_its_node_from_consolidation() -> None:
    nodes = [make_node("n1", LARGE, pods=[make_pod("a", annotations={L.DO_NOT_EVICT: "true"})])]
    out = SingleNodeConsolidation().compute(make_inputs(nodes, ON_DEMAND), schedule)
    assert out.command is None and [e.reason for e in out.events] == ["DeprovisioningBlocked"]


@dataclass(frozen=True)
class Spent:
    """A budget spent from the start: each pass gets its one simulation."""

    def spent(self) -> bool:
        return True


def test_a_sweep_over_budget_limited_passes_examines_every_candidate_once_then_finds_the_command() -> None:
    """Issue 21: no timeout drops the candidates after it — each pass continues after the last
    candidate the previous one examined, so a small budget still covers every node."""
    # five mediums stay (their pods are pinned to their hosts); the large one's 5.5 cpu fit a
    # cheaper 6-cpu type — it is the last candidate of the order
    types = [SMALL, MEDIUM, LARGE, instance_type("six", 6, price=0.25)]
    provisioners = [make_provisioner(consolidation=True, capacity_types=["on-demand"], instance_types=types)]
    full = [make_node(f"full{i}", MEDIUM, pods=[pinned(f"p{i}", f"full{i}", 1)], created=at(i)) for i in range(5)]
    big = make_node("big", LARGE, pods=[make_pod("wide", cpu=5.5)], created=at(9))
    base = make_inputs([*full, big], provisioners)
    unlimited = SingleNodeConsolidation().compute(base, schedule)
    assert unlimited.command is not None and unlimited.command.node_names == ("big",)
    order = [e.node for e in unlimited.events] + ["big"]
    assert len(order) == 6

    examined: list[str] = []
    progress = Progress()
    for _ in range(len(order)):
        out = SingleNodeConsolidation().compute(dataclasses.replace(base, budget=Spent(), progress=progress), schedule)
        assert out.covered == 1
        examined += [e.node for e in out.events]
        if out.command is not None:
            examined += list(out.command.node_names)
            assert out.complete and out.command.node_names == unlimited.command.node_names
            break
        assert not out.complete and out.progress is not None
        progress = out.progress
    assert examined == order  # every candidate once, in order, one a pass


def test_a_resumed_sweep_goes_on_after_where_it_stopped_and_a_finished_one_starts_again() -> None:
    nodes = [make_node(f"full{i}", MEDIUM, pods=[make_pod(f"p{i}", cpu=3)], created=at(i)) for i in range(3)]
    base = make_inputs(nodes, ON_DEMAND)
    names = [e.node for e in SingleNodeConsolidation().compute(base, schedule).events]
    resumed = dataclasses.replace(base, progress=Progress(single_after=names[0]))
    out = SingleNodeConsolidation().compute(resumed, schedule)
    assert [e.node for e in out.events] == names[1:] and out.complete and out.covered == 2
    assert out.progress is None  # the sweep is over: the next starts from the first candidate
