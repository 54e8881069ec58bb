"""End to end: `karpy explain node|pod` and `karpy what-if` against a real controller on the local
control plane (issue 22, "Done when"). One controller serves every scenario of the module.

- three nodes of karpy's, one per Deployment (3 CPUs each, so none shares): one whose pod a
  `maxUnavailable: 0` PDB guards and that also runs a pod pinned to it by a local volume, one with
  a `do-not-evict` pod, one freely movable; `karpy explain node` names each blocker, and for the
  movable one the new node its pod would need — then deleting that node by hand launches exactly
  that type at that price;
- five pods pending for five different reasons (a provisioner's limit, its taint, a node selector
  no provisioner offers, more CPU than any type, an architecture none has): `karpy explain pod`
  names each one's cause;
- `karpy what-if` for a GPU Deployment names the type and price, and applying it launches that.
Consolidation is disabled, so nothing but the test changes the nodes.
"""

from __future__ import annotations

import contextlib
import functools
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.core import labels as L
from controller.kube.errors import KubeError
from controller.kube.resources import NODES, Kind
from localcluster import LocalCluster
from tests.e2e.env import REPO, Controller, KarpyEnv, karpy_env
from tests.support.poll import until

pytestmark = pytest.mark.e2e

PVS = Kind("persistentvolumes", "v1", "persistentvolumes", False)
FLAGS = ("--batch-max-seconds", "5", "--batch-idle-seconds", "1")
GPU_TOLERATION = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


@functools.cache
def _prices() -> dict[tuple[str, str, str], float]:
    return {(it.name, o.zone, o.capacity_type): o.price for it in simulated_catalog() for o in it.offerings}


def node_price(node: dict[str, Any]) -> float:
    labels = node["metadata"]["labels"]
    return _prices()[(labels[L.INSTANCE_TYPE], labels[L.ZONE], labels[L.CAPACITY_TYPE])]


@dataclass
class Scenario:
    karpy: KarpyEnv
    ctrl: Controller
    nodes: dict[str, str] = field(default_factory=dict)  # app → the node its pod runs on

    def karpy_cli(self, *args: str, output: str = "json") -> Any:
        argv = [sys.executable, "-m", "karpy", *args, "--controller-url", f"http://127.0.0.1:{self.ctrl.port}",
                "--output", output]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=REPO, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout) if output == "json" else done.stdout

    def explain_node(self, name: str) -> Any:
        """`karpy explain node` once the node is a candidate (a new node is nominated for its
        pods for 10 s, and not initialized before kwok reports it Ready)."""

        def candidate() -> Any:
            answer = self.karpy_cli("explain", "node", name)
            return answer if all(b["kind"] != "not-candidate" for b in answer["blockers"]) else None

        return until(candidate, 30, f"node {name} to be a candidate")

    def node_of(self, app: str) -> str:
        running = self.karpy.running(app)
        return str(running[0]["spec"]["nodeName"]) if len(running) == 1 else ""


def _provisioners(karpy: KarpyEnv) -> None:
    karpy.provisioner("default")
    karpy.provisioner("limited", limits={"resources": {"cpu": "1"}})
    karpy.provisioner("tainted", taints=[{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}])
    karpy.provisioner(
        "gpu",
        requirements=[{"key": L.INSTANCE_CATEGORY, "operator": "In", "values": ["g"]}],
        taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
    )


@pytest.fixture(scope="module")
def scenario(local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    with karpy_env(local_cluster, tmp_path_factory.mktemp("explain")) as karpy:
        _provisioners(karpy)
        pv = f"explain-{karpy.namespace}"
        try:
            yield Scenario(karpy, karpy.start("replica-a", *FLAGS))
        finally:
            with contextlib.suppress(KubeError):
                karpy.kube.delete(PVS, pv)


def _one_node_each(s: Scenario, app: str, **pod: Any) -> str:
    s.karpy.deployment(app, 1, cpu="3", memory="1Gi", **pod)
    return str(until(lambda: s.node_of(app), 60, f"{app} Running on its own node"))


def _volume_pinned_pod(s: Scenario, node: str) -> None:
    """A pod whose PersistentVolume (local, pre-bound) can only be on `node`."""
    ns, pv = s.karpy.namespace, f"explain-{s.karpy.namespace}"
    s.karpy.apply({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
        "spec": {
            "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
            "local": {"path": "/mnt/explain"}, "claimRef": {"namespace": ns, "name": "data"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": L.HOSTNAME, "operator": "In", "values": [node]}]}]}},
        },
    })  # fmt: skip
    s.karpy.apply({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": ns},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "volumeName": pv,
                 "resources": {"requests": {"storage": "1Gi"}}},
    })  # fmt: skip
    s.karpy.deployment("vol", 1, cpu="100m", memory="64Mi",
                       volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}])  # fmt: skip
    until(lambda: s.node_of("vol") == node, 60, "the volume-pinned pod Running on its node")


@pytest.fixture(scope="module")
def three_nodes(scenario: Scenario) -> Scenario:
    s = scenario
    s.karpy.apply({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "guarded", "namespace": s.karpy.namespace},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "guarded"}}},
    })  # fmt: skip
    s.nodes["guarded"] = _one_node_each(s, "guarded")
    _volume_pinned_pod(s, s.nodes["guarded"])
    s.nodes["pinned"] = _one_node_each(s, "pinned", metadata={"annotations": {L.DO_NOT_EVICT: "true"}})
    s.nodes["free"] = _one_node_each(s, "free")
    assert len(set(s.nodes.values())) == 3, s.nodes
    return s


def _kinds(answer: dict[str, Any]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for b in answer["blockers"]:
        out.setdefault(b["kind"], set()).add(b.get("pod", ""))
    return out


def test_explain_node_names_every_blocker(three_nodes: Scenario) -> None:
    s, ns = three_nodes, three_nodes.karpy.namespace
    guarded = s.explain_node(s.nodes["guarded"])
    kinds = _kinds(guarded)
    assert {p for p in kinds["pdb"]} == {f"{ns}/{s.karpy.running('guarded')[0]['metadata']['name']}"}
    assert kinds.get("volume") == {f"{ns}/{s.karpy.running('vol')[0]['metadata']['name']}"}
    assert guarded["removable"] is False
    pinned = s.explain_node(s.nodes["pinned"])
    assert set(_kinds(pinned)) == {"do-not-evict", "consolidation-disabled"}
    assert pinned["removable"] is False
    text = s.karpy_cli("explain", "node", s.nodes["pinned"], output="table")
    assert "[do-not-evict]" in text and "has do not evict annotation" in text


def test_removing_the_movable_node_by_hand_gives_the_predicted_destination_and_price(three_nodes: Scenario) -> None:
    s = three_nodes
    free = s.explain_node(s.nodes["free"])
    assert set(_kinds(free)) == {"consolidation-disabled"} and free["removable"] is True
    (dest,) = free["destinations"]
    assert dest["kind"] == "new"
    (predicted,) = free["newNodes"]
    assert free["pricePerHour"] == pytest.approx(node_price(s.karpy.kube.get(NODES, s.nodes["free"])))
    before = {n["metadata"]["name"] for n in s.karpy.nodes()}
    s.karpy.kube.delete(NODES, s.nodes["free"])
    until(lambda: s.node_of("free") not in ("", s.nodes["free"]), 90, "the free pod Running elsewhere")
    (new_name,) = {s.node_of("free")} - before
    node = s.karpy.kube.get(NODES, new_name)
    labels = node["metadata"]["labels"]
    assert (labels[L.INSTANCE_TYPE], labels[L.ZONE], labels[L.CAPACITY_TYPE]) == (
        predicted["instanceType"],
        predicted["zone"],
        predicted["capacityType"],
    )
    assert node_price(node) == pytest.approx(predicted["pricePerHour"])


BROKEN: dict[str, tuple[dict[str, Any], str, str]] = {
    # app → (pod spec fields, provisioner whose answer names the cause, the cause)
    "over-limit": ({"nodeSelector": {L.PROVISIONER_NAME: "limited"}}, "limited", "limits would be exceeded"),
    "untolerated": ({"nodeSelector": {L.PROVISIONER_NAME: "tainted"}}, "tainted",
                    "taint dedicated=batch:NoSchedule not tolerated"),
    "no-team": ({"nodeSelector": {"team": "blue"}}, "default", 'no label or requirement "team"'),
    "too-big": ({"cpu": "1000"}, "default", "1000 cpu"),
    "s390x": ({"nodeSelector": {L.ARCH: "s390x"}}, "default", f"{L.ARCH} in [s390x]"),
}  # fmt: skip


def test_explain_pod_names_the_cause_of_each_of_five_pending_pods(scenario: Scenario) -> None:
    s = scenario
    for app, (spec, _, _) in BROKEN.items():
        fields = dict(spec)
        s.karpy.deployment(app, 1, cpu=str(fields.pop("cpu", "2")), memory="1Gi", **fields)
    names = {}
    for app in BROKEN:
        pods = until(functools.partial(s.karpy.pods, app), 30, f"{app}'s pod")
        names[app] = pods[0]["metadata"]["name"]
    for app, (_, provisioner, cause) in BROKEN.items():
        key = f"{s.karpy.namespace}/{names[app]}"

        def evaluated(k: str = key) -> Any:
            answer = s.karpy_cli("explain", "pod", k)
            return answer if answer.get("lastEvaluation") else None

        answer = until(evaluated, 60, f"the controller's evaluation of {app}")
        assert answer["status"] == "pending", answer
        assert answer["lastEvaluation"]["outcome"] == "unschedulable"
        reasons = {p["provisioner"]: p.get("reason", "") for p in answer["provisioners"]}
        assert cause.lower() in reasons[provisioner].lower(), (app, reasons)
        text = s.karpy_cli("explain", "pod", key, output="table")
        assert "last evaluation" in text and cause.lower() in text.lower(), text


GPU = "trainer"


def test_what_if_names_the_gpu_type_and_price_the_controller_then_launches(scenario: Scenario, tmp_path: Path) -> None:
    s = scenario
    manifest = s.karpy.deployment_manifest(GPU, 1, cpu="1", memory="2Gi", tolerations=GPU_TOLERATION)
    manifest["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    path = tmp_path / "trainer.yaml"
    path.write_text(json.dumps(manifest))
    answer = s.karpy_cli("what-if", "--pod", str(path))
    (predicted,) = answer["newNodes"]
    assert predicted["provisioner"] == "gpu" and predicted["instanceType"].startswith("g")
    assert s.karpy.pods(GPU) == []  # what-if changed nothing
    text = s.karpy_cli("what-if", "--pod", str(path), output="table")
    assert predicted["instanceType"] in text and "added price" in text
    s.karpy.apply(manifest)
    node_name = until(lambda: s.node_of(GPU), 60, "the GPU pod Running")
    node = s.karpy.kube.get(NODES, node_name)
    assert node["metadata"]["labels"][L.INSTANCE_TYPE] == predicted["instanceType"]
    assert node_price(node) == pytest.approx(predicted["pricePerHour"])
