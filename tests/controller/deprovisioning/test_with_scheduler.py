"""Consolidation decisions driven by the real scheduler over the simulated catalog."""

from __future__ import annotations

from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.core import labels as L
from controller.deprovisioning.decide import decide
from controller.deprovisioning.types import DeprovisioningSettings
from controller.scheduling.scheduler import schedule
from tests.builders.deprovisioning import ProvisionerWithTypes, make_inputs, make_node, make_pod, make_provisioner

CATALOG = {it.name: it for it in simulated_catalog()}
NOW = DeprovisioningSettings(validation_wait_seconds=0)


def _provisioner() -> ProvisionerWithTypes:
    return make_provisioner(consolidation=True, capacity_types=["on-demand"], instance_types=tuple(CATALOG.values()))


def test_half_empty_nodes_become_fewer_and_cheaper() -> None:
    nodes = [
        make_node(f"n{i}", CATALOG["m5.xlarge"], zone="us-west-2a", pods=[make_pod(f"p{i}", cpu=0.5)]) for i in range(3)
    ]
    decision = decide(make_inputs(nodes, [_provisioner()]), None, schedule, NOW)
    cmd = decision.execute
    assert cmd is not None and decision.method == "multinodeconsolidation"
    assert len(cmd.replacements) < len(cmd.candidates) == 3
    before = sum(c.price or 0 for c in cmd.candidates)
    after = sum(r.launch.price for r in cmd.replacements if r.launch is not None)
    assert after < before


def test_an_oversized_node_is_replaced_by_a_cheaper_one() -> None:
    nodes = [make_node("big", CATALOG["m5.4xlarge"], zone="us-west-2a", pods=[make_pod("p", cpu=0.5)])]
    decision = decide(make_inputs(nodes, [_provisioner()]), None, schedule, NOW)
    assert decision.execute is not None and decision.execute.reason == "consolidation/replace"
    (new,) = decision.execute.replacements
    assert new.launch is not None and new.launch.price < CATALOG["m5.4xlarge"].offerings[0].price * 2
    assert all(o.capacity_type == L.CAPACITY_TYPE_ON_DEMAND for o in [new.launch])
