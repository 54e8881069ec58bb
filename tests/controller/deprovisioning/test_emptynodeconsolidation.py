"""Empty-node consolidation: every empty consolidatable node deleted at once (spec §6.6)."""

from __future__ import annotations

from controller.core import labels as L
from controller.deprovisioning.emptynodeconsolidation import EmptyNodeConsolidation
from controller.scheduling.scheduler import schedule
from tests.builders.deprovisioning import (
    make_inputs,
    make_node,
    make_pod,
    make_provisioner,
)

ON_DEMAND = [make_provisioner(consolidation=True, capacity_types=["on-demand"])]


def test_empty_nodes_are_deleted_together() -> None:
    nodes = [
        make_node("e1"),
        make_node("e2", pods=[make_pod("ds", owner_kind="DaemonSet")]),
        make_node("busy", pods=[make_pod("a")]),
    ]
    out = EmptyNodeConsolidation().compute(make_inputs(nodes, ON_DEMAND), schedule)
    assert out.command is not None and out.command.reason == "consolidation/delete"
    assert out.command.node_names == ("e1", "e2")


def test_empty_node_with_do_not_consolidate_stays() -> None:
    nodes = [make_node("e1", annotations={L.DO_NOT_CONSOLIDATE: "true"})]
    assert EmptyNodeConsolidation().compute(make_inputs(nodes, ON_DEMAND), schedule).command is None
