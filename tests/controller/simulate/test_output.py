"""Rendering results (`controller/simulate/output.py`)."""

from __future__ import annotations

from controller.core.taints import Taint
from controller.simulate.output import to_json, to_table
from tests.builders.scheduling import make_node, make_pod, make_provisioner, run


def test_json_has_design_md_shape() -> None:
    provisioner = make_provisioner(startup_taints=[Taint("init", "true", "NoExecute")])
    result = run([make_pod("a", cpu="1"), make_pod("b"), make_pod("huge", cpu="100")], [provisioner],
                 nodes=[make_node("n1", cpu="150m")])  # fmt: skip
    doc = to_json(result)
    assert doc.keys() == {"nodes", "existingNodes", "unschedulable", "totalPricePerHour"}
    node = doc["nodes"][0]
    assert node.keys() == {"name", "provisioner", "instanceType", "capacityType", "zone", "pricePerHour", "labels",
                           "taints", "allocatable", "pods"}  # fmt: skip
    assert (node["name"], node["instanceType"], node["capacityType"], node["zone"]) == (
        "default-1",
        "m.large",
        "on-demand",
        "test-zone-a",
    )
    assert node["taints"] == [{"key": "init", "value": "true", "effect": "NoExecute"}]
    assert node["allocatable"] == {"cpu": "2", "memory": "8Gi", "pods": "10"}
    assert node["labels"]["karpenter.sh/provisioner-name"] == "default"
    assert node["pods"] == ["default/a"]
    assert doc["existingNodes"] == [{"name": "n1", "pods": ["default/b"]}]
    assert doc["unschedulable"][0]["pod"] == "default/huge"
    assert doc["totalPricePerHour"] == 0.1


def test_table_is_readable() -> None:
    result = run([make_pod("a", cpu="1"), make_pod("huge", cpu="100")])
    text = to_table(result)
    assert "New nodes: 1, $0.1000/hour" in text
    assert "default-1  default      m.large  on-demand  test-zone-a  0.1000  1/2 (50%)  0.1Gi/8.0Gi (2%)  1" in text
    assert "By instance type: m.large on-demand x1" in text
    assert "default/huge  no instance type in provisioner 'default' has 100 CPU" in text
