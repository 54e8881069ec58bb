"""`plan_cluster`: what karpy would do on a cluster it does not manage, from plain objects."""

from __future__ import annotations

import pytest

from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.core import labels as L
from controller.explain.cluster import plan_cluster
from controller.scheduling.scheduler import schedule
from tests.builders.wire import badly_packed, make_pdb, make_pod, make_provisioner

NOW = 1_704_067_500.0


def _prices() -> dict[tuple[str, str, str], float]:
    return {(it.name, o.zone, o.capacity_type): o.price for it in simulated_catalog() for o in it.offerings}


def test_hand_made_nodes_are_adopted_and_consolidated_with_the_saving() -> None:
    plan = plan_cluster(badly_packed(), simulated_catalog(), NOW, schedule)
    m5 = _prices()[("m5.2xlarge", "us-west-2a", "on-demand")]
    assert plan["before"] == {"nodes": 4, "pricePerHour": pytest.approx(4 * m5)}
    assert plan["consolidation"], plan
    assert plan["after"]["pricePerHour"] < plan["before"]["pricePerHour"] / 2
    assert plan["savingPerHour"] == pytest.approx(plan["before"]["pricePerHour"] - plan["after"]["pricePerHour"])
    assert "no valid Provisioner in the cluster" in plan["warnings"][0]
    by_node = {n["node"]: n for n in plan["nodes"]}
    assert {by_node[f"ng-{i}"]["origin"] for i in range(4)} == {"adopted"}
    kept = [n for n in plan["nodes"] if n["plan"] in ("kept", "launch")]
    assert sorted(p for n in kept for p in n["pods"]) == [f"default/web-{i}" for i in range(4)]
    assert plan["after"]["pricePerHour"] == pytest.approx(sum(n["pricePerHour"] for n in kept))


def test_a_pdb_keeps_its_node_and_pending_pods_get_a_launch() -> None:
    objects = badly_packed(2)
    objects["poddisruptionbudgets"] = [make_pdb("web-0", {"app": "db"})]
    objects["pods"][0]["metadata"]["labels"] = {"app": "db"}
    objects["pods"].append(make_pod("pending", cpu="12", memory="1Gi"))
    objects["provisioners"] = [make_provisioner("default", consolidation={"enabled": True})]
    plan = plan_cluster(objects, simulated_catalog(), NOW, schedule)
    assert plan["warnings"] == []
    by_node = {n["node"]: n for n in plan["nodes"]}
    assert by_node["ng-0"]["plan"] == "kept"  # its pod's PDB allows no disruption
    assert plan["launches"] and "default/pending" in plan["launches"][0]["pods"]


def test_nodes_of_unknown_types_and_consolidation_disabled_are_left_alone() -> None:
    objects = badly_packed(2)
    objects["nodes"][1]["metadata"]["labels"][L.INSTANCE_TYPE] = "x9.mystery"
    objects["provisioners"] = [make_provisioner("default")]
    plan = plan_cluster(objects, simulated_catalog(), NOW, schedule)
    assert plan["consolidation"] == []
    assert any("x9.mystery" in w for w in plan["warnings"])
    assert {n["plan"] for n in plan["nodes"]} == {"kept"}
    assert plan["savingPerHour"] == 0


def test_a_pod_no_instance_type_fits_does_not_keep_the_plan_from_consolidating() -> None:
    """The plan's provisioning found no room for it: no scale-up is under way (`Inputs.scale_up`)."""
    objects = badly_packed()
    objects["pods"].append(make_pod("impossible", cpu="4096", memory="1Gi"))
    plan = plan_cluster(objects, simulated_catalog(), NOW, schedule)
    assert [u["pod"] for u in plan["unschedulable"]] == ["default/impossible"]
    assert plan["consolidation"], plan
    assert plan["after"]["pricePerHour"] < plan["before"]["pricePerHour"] / 2
