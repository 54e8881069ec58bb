"""Reading `karpy simulate` inputs (`controller/simulate/inputs.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.simulate.inputs import InputError, read_catalog, read_inputs

PROVISIONER = {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": "default"}}


def write(tmp_path: Path, name: str, *docs: Any) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def pod(name: str, node: str = "", cpu: str = "100m") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def node(name: str, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"karpenter.sh/provisioner-name": "default"}}
    if deleting:
        meta["deletionTimestamp"] = "2023-01-01T00:00:00Z"
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": {"allocatable": {"cpu": "2"}}}


def test_documents_are_sorted_out(tmp_path: Path) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}},
    }
    daemonset = {"kind": "DaemonSet", "metadata": {"name": "agent"}, "spec": {"template": {"spec": {"containers": []}}}}
    pdb = {"kind": "PodDisruptionBudget", "metadata": {"name": "pdb"}}
    service = {"kind": "Service", "metadata": {"name": "svc"}}
    inputs = read_inputs(
        [
            write(tmp_path, "p.yaml", PROVISIONER),
            write(tmp_path, "pods.yaml", deployment, daemonset, pdb, service, pod("bound", "n1"), pod("moving", "n2")),
            write(tmp_path, "nodes.yaml", node("n1"), node("n2", deleting=True)),
        ]
    )
    assert [p.name for p in inputs.provisioners] == ["default"]
    assert inputs.provisioners[0].requirements["kubernetes.io/arch"].values == {"amd64"}  # defaulted
    assert [p.key for p in inputs.pods] == ["default/web-0", "default/web-1", "default/moving"]
    assert [d.key for d in inputs.daemonsets] == ["default/agent"]
    nodes = {n.name: n for n in inputs.nodes}
    assert [p.key for p in nodes["n1"].pods] == ["default/bound"]
    assert nodes["n2"].marked_for_deletion
    assert not nodes["n1"].initialized  # owned, without karpenter.sh/initialized=true
    assert nodes["n1"].allocatable == {"cpu": 2000}
    assert any("Service" in w for w in inputs.warnings)


def test_invalid_provisioner_names_document_and_field(tmp_path: Path) -> None:
    bad = {**PROVISIONER, "metadata": {"name": "bad"}, "spec": {"requirements": [{"key": "k", "operator": "Like"}]}}
    with pytest.raises(InputError) as err:
        read_inputs([write(tmp_path, "p.yaml", PROVISIONER, bad)])
    assert "p.yaml: document 2 (Provisioner bad)" in str(err.value)
    assert "spec.requirements[0].operator" in str(err.value)


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        ([pod("p", cpu="lots")], r"document 1 \(Pod p\): spec.containers\[0\].resources.requests.cpu"),
        (["just text"], "document 1: expected a mapping"),
        ([{"metadata": {"name": "x"}}], "kind: required"),
        ([PROVISIONER, PROVISIONER], "defined more than once"),
        ([{"kind": "Deployment", "metadata": {"name": "d"}, "spec": {}}], r"\(Deployment d\): spec.template"),
    ],
)
def test_bad_documents(tmp_path: Path, docs: list[Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        read_inputs([write(tmp_path, "in.yaml", *docs)])


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        read_inputs([str(tmp_path / "missing.yaml")])
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [b\n")
    with pytest.raises(InputError, match="not valid YAML"):
        read_inputs([str(broken)])


def test_catalog_files(tmp_path: Path) -> None:
    good = tmp_path / "catalog.yaml"
    good.write_text(yaml.safe_dump({"instanceTypes": [{"name": "x.large", "capacity": {"cpu": "2"}, "offerings": [
        {"zone": "z", "capacityType": "spot", "price": 0.1}]}]}))  # fmt: skip
    assert [it.name for it in read_catalog(str(good))] == ["x.large"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"instanceTypes": [{"name": "x"}]}')
    with pytest.raises(InputError, match=r"bad.json: instanceTypes\[0\] \(x\).offerings"):
        read_catalog(str(bad))
