"""The result of `schedule()` (`controller/scheduling/scheduler.py`): nodes to launch and options."""

from __future__ import annotations

import dataclasses

from controller.core.labels import CAPACITY_TYPE, INSTANCE_TYPE, PROVISIONER_NAME, ZONE
from controller.scheduling.scheduler import launch_labels, planned_labels
from tests.builders.scheduling import (
    make_instance_type,
    make_node,
    make_pod,
    make_provisioner,
    node_of,
    req,
    run,
    small_catalog,
)


def test_options_are_cheapest_first_and_capped() -> None:
    result = run([make_pod("p")], max_instance_types=3)
    node = result.new_nodes[0]
    names = [it.name for it in node.instance_type_options]
    assert names == ["m.large", "a.xlarge", "m.xlarge"]
    assert node.requirements[INSTANCE_TYPE].values == set(names)
    assert node.launch is not None and node.launch.instance_type.name == "m.large"


def test_new_node_carries_the_provisioner_and_its_labels() -> None:
    provisioner = make_provisioner("team", labels={"team": "a"}, requirements=[req("tier", "In", "gold")])
    result = run([make_pod("p", cpu="1")], [provisioner])
    node = result.new_nodes[0]
    assert node.provisioner == "team"
    assert node.labels == {"team": "a", "tier": "gold", PROVISIONER_NAME: "team"}
    assert node.requests == {"cpu": 1000, "memory": 128 * 2**20, "pods": 1}
    labels = planned_labels(node)
    assert labels[INSTANCE_TYPE] == "m.large"
    assert labels[ZONE] == "test-zone-a" and labels[CAPACITY_TYPE] == "on-demand"


def test_launch_labels_the_one_rule_for_a_plan_and_a_launched_node() -> None:
    provisioner = make_provisioner("team", labels={"team": "a"})
    (planned,) = run([make_pod("p", cpu="1")], [provisioner]).new_nodes
    node = dataclasses.replace(planned, labels={**planned.labels, "kubernetes.io/hostname": "h"})  # restricted
    instance = {INSTANCE_TYPE: "m.large", ZONE: "test-zone-b", "team": "cloud's"}
    labels = launch_labels(node, instance, hostname="team-abc12")
    assert labels["kubernetes.io/hostname"] == "team-abc12" and labels[ZONE] == "test-zone-b"
    assert labels["team"] == "cloud's" and labels[PROVISIONER_NAME] == "team"  # the instance's keys win
    assert "kubernetes.io/hostname" not in planned_labels(node)  # no name yet, and never a restricted key


def test_spot_before_on_demand_when_both_are_allowed() -> None:
    types = [
        make_instance_type("m.large", price=0.10, spot_price=0.05, spot_zones=["test-zone-b"]),
        make_instance_type("c.large", price=0.09),
    ]
    both = make_provisioner(requirements=[req(CAPACITY_TYPE, "In", "spot", "on-demand")])
    launch = run([make_pod("p")], [both], types).new_nodes[0].launch
    assert launch is not None
    assert (launch.instance_type.name, launch.capacity_type, launch.zone, launch.price) == (
        "m.large",
        "spot",
        "test-zone-b",
        0.05,
    )
    on_demand = make_provisioner(requirements=[req(CAPACITY_TYPE, "In", "on-demand")])
    launch = run([make_pod("p")], [on_demand], types).new_nodes[0].launch
    assert launch is not None and (launch.instance_type.name, launch.capacity_type) == ("c.large", "on-demand")


def test_gpu_and_metal_types_are_launched_only_when_nothing_else_fits() -> None:
    types = [make_instance_type("g.large", price=0.01, gpus=1), make_instance_type("m.large", price=0.10)]
    node = run([make_pod("p")], types=types).new_nodes[0]
    assert [it.name for it in node.instance_type_options] == ["g.large", "m.large"]
    assert node.launch is not None and node.launch.instance_type.name == "m.large"


def test_instance_types_per_provisioner_are_used_as_given() -> None:
    catalog = small_catalog()
    by_provisioner = {"default": [it for it in catalog if it.name == "m.2xlarge"]}
    node = run([make_pod("p")], types=by_provisioner).new_nodes[0]
    assert [it.name for it in node.instance_type_options] == ["m.2xlarge"]


def test_existing_assignments_and_all_scheduled() -> None:
    result = run([make_pod("a"), make_pod("b")], nodes=[make_node("n1")])
    assert result.existing_assignments == {"n1": ("default/a", "default/b")}
    assert result.all_scheduled
    assert node_of(result, "a") == "n1"
