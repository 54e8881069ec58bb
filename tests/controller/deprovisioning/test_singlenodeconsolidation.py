"""Single-node consolidation: one node at a time, and why the others stay (spec §6.6)."""

from __future__ import annotations

from controller.core import labels as L
from controller.deprovisioning.singlenodeconsolidation import SingleNodeConsolidation
from controller.scheduling.scheduler import schedule
from tests.builders.deprovisioning import (
    LARGE,
    MEDIUM,
    at,
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
    assert [(e.node, e.reason, e.message) for e in out.events] == [
        ("n1", "Unconsolidatable", "can't replace with a cheaper node")
    ]


def test_do_not_evict_pod_keeps_its_node_from_consolidation() -> None:
    nodes = [make_node("n1", LARGE, pods=[make_pod("a", annotations={L.DO_NOT_EVICT: "true"})])]
    out = SingleNodeConsolidation().compute(make_inputs(nodes, ON_DEMAND), schedule)
    assert out.command is None and [e.reason for e in out.events] == ["DeprovisioningBlocked"]
